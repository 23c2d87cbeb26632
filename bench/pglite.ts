// Measures the embedded database (PGlite through knex and node-postgres, the path the services use)
// on the operations the pipeline runs, and the same against Postgres when DATABASE_URL is set:
//   bash infra/run.sh node bench/pglite.ts [/tmp/dir]
//   DATABASE_URL=postgres://... bash infra/run.sh node bench/pglite.ts
// Figures from one run are in docs/architecture.md ("Embedded mode"). Not a test, and not in the build.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedDb } from '../shared/src/db/embedded.ts';
import { createDb, type Knex, migrateLatest } from '../shared/src/db/index.ts';
import { EventIdStore } from '../shared/src/db/stores/event-ids.ts';
import { PipelineStore } from '../shared/src/db/stores/pipeline.ts';
import type { AttemptRecord, RoutedRecord } from '../shared/src/model/index.ts';

const ms = (t0: number) => Math.round(performance.now() - t0);

async function timed(label: string, n: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  const total = performance.now() - t0;
  console.log(
    `  ${label.padEnd(52)} ${String(n).padStart(5)} x  ${(total / n).toFixed(2).padStart(7)} ms each  ${Math.round((n * 1000) / total)}/s`,
  );
}

async function workload(db: Knex): Promise<void> {
  const ids = new EventIdStore(db);
  const store = new PipelineStore(db);
  const tenant = `bench_${Date.now()}`;
  const dest = randomUUID();
  await db('tenants').insert({ id: tenant });
  const now = () => new Date().toISOString();
  const routed = (n: number): RoutedRecord[] =>
    Array.from({ length: n }, () => ({
      event: {
        id: randomUUID(),
        tenant_id: tenant,
        topic: 'user.created',
        time: now(),
        received_at: now(),
        eligible_for_retry: true,
        metadata: null,
        data: { n },
      },
      matched_destination_ids: [dest],
      skipped_destination_ids: [],
    }));
  const attempts = (events: RoutedRecord[]): AttemptRecord[] =>
    events.map(({ event: e }) => ({
      id: randomUUID(),
      tenant_id: tenant,
      destination_id: dest,
      destination_type: 'webhook',
      event_id: e.id,
      topic: e.topic,
      event_time: e.time,
      event_received_at: e.received_at as string,
      status: 'success',
      code: '200',
      response_data: { status: 200 },
      attempt_number: 1,
      manual: false,
      time: now(),
      duration_ms: 3,
      final: true,
    }));

  await timed('select 1 (round trip)', 500, () => db.raw('select 1'));
  await timed('publish reservation: reserve + accept one id', 300, async () => {
    const k = [{ tenant_id: tenant, id: randomUUID() }];
    await ids.reserve(k);
    await ids.accept(k);
  });
  const stored: RoutedRecord[] = [];
  await timed('storeRouted, 1 event per batch (events + deliveries)', 300, async () => {
    const r = routed(1);
    stored.push(...r);
    await store.storeRouted(r);
  });
  await timed('storeRouted, 100 events per batch', 30, async () => {
    const r = routed(100);
    stored.push(...r);
    await store.storeRouted(r);
  });
  let m = 0;
  await timed('missingEvents, 100 attempts per batch (events stored)', 30, async () => {
    await store.missingEvents(attempts(stored.slice(m, m + 100)));
    m += 100;
  });
  let a = 0;
  await timed('storeAttempts, 100 attempts per batch (+ deliveries)', 30, async () => {
    await store.storeAttempts(attempts(stored.slice(a, a + 100)));
    a += 100;
  });
  await timed('event by key', 300, (i) =>
    db('events')
      .where({ tenant_id: tenant, id: (stored[i] as RoutedRecord).event.id })
      .first(),
  );
  await timed('newest 100 attempts of a destination', 100, () =>
    db('attempts')
      .where({ tenant_id: tenant, destination_id: dest })
      .orderBy([
        { column: 'time', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(100),
  );
  console.log(`  rows: ${stored.length} events, ${a} attempts`);
}

if (process.env.DATABASE_URL) {
  console.log('Postgres (DATABASE_URL)');
  const db = createDb({ url: process.env.DATABASE_URL, poolMax: 4 });
  await migrateLatest(db);
  await workload(db);
  await db.destroy();
} else {
  const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), 'sy-pglite-bench-'));
  console.log(`PGlite in ${dir}`);
  let t0 = performance.now();
  let e = await openEmbeddedDb(dir);
  console.log(`  open (first time: initdb)     ${ms(t0)} ms`);
  t0 = performance.now();
  await migrateLatest(e.db);
  console.log(`  migrations (first time)       ${ms(t0)} ms`);
  await e.close();
  t0 = performance.now();
  e = await openEmbeddedDb(dir);
  await migrateLatest(e.db);
  console.log(`  reopen + migrations check     ${ms(t0)} ms`);
  await workload(e.db);
  await e.close();
  if (!process.argv[2]) rmSync(dir, { recursive: true, force: true });
}
