// Postgres restarted during a run, in stack mode (every service its own process, the real broker):
// the management API answers 503 with Retry-After while it is down, nothing accepted is lost, and
// the attempts are stored once it is back. The suite runs its own Postgres (the test command's is
// shared with the other suites), stopped and started again with infra/postgres/pg.sh.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createDb } from '@switchyard/shared/db/index.ts';
import { freePort, ROOT, startReceiver, startStack, waitFor } from '@switchyard/shared/testing/index.ts';

t.test('Postgres restart during a run', async (t) => {
  const pgPort = await freePort();
  const pgDir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? '/tmp', 'pg-fault-'));
  // The server runs as the postgres user when the tests run as root: it must reach its directory.
  chmodSync(pgDir, 0o755);
  const pg = (cmd: 'start' | 'stop') =>
    execFileSync('bash', [`${ROOT}infra/postgres/pg.sh`, cmd], {
      env: { ...process.env, PG_PORT: String(pgPort), PG_DATA_DIR: join(pgDir, 'data'), PG_FAST: '1', PG_STAT_STATEMENTS: '0' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  pg('start');
  t.teardown(() => {
    pg('stop');
    rmSync(pgDir, { recursive: true, force: true });
  });
  const { env, base, api } = await startStack(t, {
    DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/switchyard`,
    TOPICS: 'order.paid',
    KAFKA_PARTITIONS: '2',
    RETRY_SCHEDULE: '1,1,1',
    // The routing view is read again every 200 ms, so publishes meet the outage too.
    ROUTING_CACHE_TTL_MS: '200',
  });
  const rx = await startReceiver(t);
  await api('PUT', '/api/v1/tenants/pg');
  await api('POST', '/api/v1/tenants/pg/destinations', { type: 'webhook', topics: '*', config: { url: `${rx.url}/pg` } });

  const accepted = new Set<string>();
  const answers: Record<string, number> = {};
  let retryAfterMissing = 0;
  let n = 0;
  const publish = async () => {
    const id = `p-${n++}`;
    for (;;) {
      const res = await fetch(`${base}/api/v1/publish`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ tenant_id: 'pg', id, topic: 'order.paid', data: { id } }),
      });
      await res.arrayBuffer();
      answers[res.status] = (answers[res.status] ?? 0) + 1;
      if (res.status === 202) return void accepted.add(id);
      if (res.status >= 500 && !res.headers.get('retry-after')) retryAfterMissing++;
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  let publishing = true;
  const publishers = Array.from({ length: 4 }, async () => {
    while (publishing) await publish();
  });

  await waitFor('a hundred accepted', () => accepted.size >= 100, 60_000);
  pg('stop');
  const down = await waitFor(
    'management answering 503 while Postgres is down',
    async () => {
      const r = await fetch(`${base}/api/v1/tenants/pg`, { headers: { authorization: `Bearer ${env.API_KEY}` } });
      return r.status === 503 ? { status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() } : undefined;
    },
    20_000,
  );
  t.match(down, { status: 503, retryAfter: /^\d+$/, body: { code: 'SERVICE_UNAVAILABLE' } }, 'management: 503 with Retry-After');
  await new Promise((r) => setTimeout(r, 3000));
  pg('start');
  const total = accepted.size + 100;
  await waitFor('a hundred more accepted', () => accepted.size >= total, 60_000);
  publishing = false;
  await Promise.all(publishers);

  const db = createDb({ url: env.DATABASE_URL as string, poolMax: 2 });
  t.teardown(() => db.destroy());
  const missing = await waitFor(
    'a final attempt for every accepted event',
    async () => {
      const rows = (await db('attempts').where({ tenant_id: 'pg', final: true }).distinct('event_id')) as { event_id: string }[];
      const done = new Set(rows.map((r) => r.event_id));
      const left = [...accepted].filter((id) => !done.has(id));
      return left.length === 0 ? left : undefined;
    },
    90_000,
  ).catch(async () => {
    const rows = (await db('attempts').where({ tenant_id: 'pg', final: true }).distinct('event_id')) as { event_id: string }[];
    const done = new Set(rows.map((r) => r.event_id));
    return [...accepted].filter((id) => !done.has(id));
  });
  const ids = rx.requests.map((r) => String(r.headers['x-outpost-event-id']));
  t.comment(
    `Postgres restart: ${accepted.size} accepted; answers ${JSON.stringify(answers)}; accepted without a final attempt ${missing.length}; ` +
      `received ${ids.length}, duplicates ${ids.length - new Set(ids).size}`,
  );
  t.same(missing, [], 'nothing accepted was lost; every attempt stored once Postgres is back');
  t.equal(retryAfterMissing, 0, 'every 5xx answer to a publish carried Retry-After');
  t.ok(
    [...accepted].every((id) => ids.includes(id)),
    'every accepted event reached the receiver',
  );
});
