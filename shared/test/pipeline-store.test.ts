// How stored attempts move their delivery's row: the latest attempt of a batch decides the status,
// a success (in the batch or stored before) is never undone, and a redelivered attempt counts once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { openEmbeddedDb } from '../src/db/embedded.ts';
import { createDb, type Knex, migrateLatest } from '../src/db/index.ts';
import { ensurePartitions } from '../src/db/partitions.ts';
import { PipelineStore } from '../src/db/stores/pipeline.ts';
import { uuidv7 } from '../src/ids.ts';
import type { AttemptRecord } from '../src/model/index.ts';
import { createTestDatabase } from '../src/testing/index.ts';

t.test('attempts on Postgres: latest decides, a success stands, redeliveries count once', async (t) => {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 2 });
  t.teardown(() => db.destroy());
  await attemptsMoveDeliveries(t, db);
});

t.test('attempts on PGlite (embedded mode): the same', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-pipeline-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const e = await openEmbeddedDb(dir);
  t.teardown(() => e.close());
  await attemptsMoveDeliveries(t, e.db);
});

async function attemptsMoveDeliveries(t: Test, db: Knex): Promise<void> {
  await migrateLatest(db);
  await ensurePartitions(db, new Date(), { behindDays: 1 });
  const store = new PipelineStore(db);
  const base = Date.now() - 60_000;
  const eventTime = new Date(base).toISOString();
  const attempt = (event: string, n: number, status: 'success' | 'failed'): AttemptRecord => {
    const at = base + n * 1000;
    return {
      id: uuidv7(at),
      tenant_id: 'acme',
      destination_id: 'des_1',
      destination_type: 'webhook',
      event_id: event,
      topic: 'user.created',
      event_time: eventTime,
      event_received_at: eventTime,
      status,
      code: status === 'success' ? '200' : '503',
      response_data: null,
      attempt_number: n,
      manual: false,
      time: new Date(at).toISOString(),
      duration_ms: 3,
      final: false,
    };
  };
  // e1: failed, succeeded, failed again (a manual retry) in one batch; e2: two failures; e3..e300 succeed once.
  const e1 = [attempt('e1', 1, 'failed'), attempt('e1', 2, 'success'), attempt('e1', 3, 'failed')];
  const e2 = [attempt('e2', 1, 'failed'), attempt('e2', 2, 'failed')];
  const many = Array.from({ length: 298 }, (_, i) => attempt(`e${i + 3}`, 1, 'success'));
  const batch = [...many, ...e1, ...e2];
  t.equal((await store.storeAttempts(batch)).length, batch.length, 'every attempt is new');
  t.equal((await store.storeAttempts([e1[0] as AttemptRecord, ...e2])).length, 0, 'a redelivered attempt is not new');
  // A later batch: e1 fails once more; e2 finally succeeds.
  await store.storeAttempts([attempt('e1', 4, 'failed'), attempt('e2', 3, 'success')]);

  const rows = (await db('deliveries')
    .where({ tenant_id: 'acme' })
    .select('event_id', 'status', 'attempts', 'last_attempt_at', 'successful_at')) as Array<{
    event_id: string;
    status: string;
    attempts: number;
    last_attempt_at: Date;
    successful_at: Date | null;
  }>;
  const by = new Map(rows.map((r) => [r.event_id, r]));
  t.equal(rows.length, 300, 'one row per delivery');
  const r1 = by.get('e1');
  t.equal(r1?.status, 'success', 'a success in the batch stands against a later failure');
  t.equal(r1?.attempts, 4, 'attempts counts up to the latest');
  t.equal(r1?.successful_at?.toISOString(), e1[1]?.time, 'successful_at is the success, not the latest attempt');
  t.equal(r1?.last_attempt_at.toISOString(), new Date(base + 4000).toISOString(), 'last_attempt_at is the latest');
  const r2 = by.get('e2');
  t.equal(r2?.status, 'success', 'a success in a later batch');
  t.equal(r2?.successful_at?.toISOString(), new Date(base + 3000).toISOString());
  t.equal(r2?.attempts, 3);
  t.ok(
    many.every((a) => by.get(a.event_id)?.status === 'success' && by.get(a.event_id)?.successful_at?.toISOString() === a.time),
    'each of the 298 single successes has its own time',
  );
  t.equal(Number((await db('attempts').where({ tenant_id: 'acme' }).count({ n: '*' }))[0]?.n), 305, 'each attempt stored once');
}
