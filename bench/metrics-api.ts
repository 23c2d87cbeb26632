// Measures the metrics API (GET .../metrics/attempts) over 24 h of a tenant with 10 million attempts,
// through the gateway's route (app.inject: routing, validation, the query, serialisation) against
// Postgres:
//   DATABASE_URL=postgres://... bash infra/run.sh node bench/metrics-api.ts
// The per-minute counts are seeded as the attempts service writes them for that traffic (one row per
// minute, destination, topic, status and code): 10M attempts spread over 20 destinations, 2 topics and
// 3 outcomes, plus 50 other tenants of 1M attempts each. Figures are in docs/operations.md ("Metrics
// API"). Not a test, and not in the build.
import pg from 'pg';
import { build } from '../services/gateway/src/app.ts';
import { loadConfig } from '../shared/src/config/index.ts';
import { createCipher } from '../shared/src/crypto.ts';
import { createDb, migrateLatest } from '../shared/src/db/index.ts';
import { createLogger } from '../shared/src/log.ts';

const base = process.env.DATABASE_URL;
if (!base) throw new Error('set DATABASE_URL (a Postgres server; a fresh database is created on it)');
const name = `sy_metrics_bench_${Date.now()}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(base);
url.pathname = `/${name}`;
const db = createDb({ url: url.toString(), poolMax: 10 });
try {
  await migrateLatest(db);
  const end = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);
  const start = new Date(end.getTime() - 86_400_000);
  const t0 = performance.now();
  // 10M attempts a day: 58 a minute for each of 20 destinations, 2 topics and 3 outcomes.
  // As the attempts service writes them for that traffic: per minute (tenant, topic, status, code) and
  // per hour (with the destination).
  const seed = async (tenant: string, perMinute: number, destinations: number) => {
    const outcomes = `(VALUES ('success', '200'), ('failed', '500'), ('failed', 'ERR')) AS o(status, code)`;
    const topics = `unnest(array['order.paid', 'user.created']) AS t`;
    await db.raw(
      `INSERT INTO attempt_counts_minute (tenant_id, minute, topic, status, code, count)
       SELECT ?, m, t, o.status, o.code, ?::int * ?::int FROM generate_series(?::timestamptz, ?::timestamptz - interval '1 minute', interval '1 minute') AS m, ${topics}, ${outcomes}`,
      [tenant, perMinute, destinations, start, end],
    );
    await db.raw(
      `INSERT INTO attempt_counts_hour (tenant_id, hour, destination_id, topic, status, code, count)
       SELECT ?, h, 'dest_' || d, t, o.status, o.code, ?::int * 60 FROM generate_series(?::timestamptz, ?::timestamptz - interval '1 hour', interval '1 hour') AS h,
              generate_series(1, ?) AS d, ${topics}, ${outcomes}`,
      [tenant, perMinute, start, end, destinations],
    );
  };
  await db('tenants').insert({ id: 'acme' });
  await seed('acme', 58, 20);
  for (let i = 0; i < 50; i++) await seed(`other_${i}`, 58, 2);
  await db.raw('ANALYZE attempt_counts_minute, attempt_counts_hour');
  const [{ rows, attempts }] = (await db('attempt_counts_hour')
    .where('tenant_id', 'acme')
    .select(db.raw('count(*)::bigint AS rows, sum(count)::bigint AS attempts'))) as Array<{
    rows: number;
    attempts: number;
  }> as [{ rows: number; attempts: number }];
  console.log(
    `seeded in ${Math.round(performance.now() - t0)} ms: acme ${rows} hourly count rows = ${attempts} attempts in 24 h, plus 50 tenants`,
  );

  const config = loadConfig({
    API_KEY: 'bench-key',
    API_JWT_SECRET: 'bench-jwt-secret-0123456789abcdef',
    AES_ENCRYPTION_SECRET: 'bench-aes-secret-0123456789abcdef',
    DATABASE_URL: url.toString(),
    KAFKA_BROKERS: 'x:1',
  });
  const app = await build(config, {
    db,
    cipher: createCipher('x'),
    producer: { send: async () => undefined, sendMany: async () => undefined, close: async () => undefined },
    logger: createLogger('bench', 'silent'),
  });
  await app.ready();
  const range = `start=${start.toISOString()}&end=${end.toISOString()}`;
  const queries = [
    `bucket=hour&${range}`,
    `bucket=hour&group_by=status,code&${range}`,
    `bucket=minute&group_by=status&${range}`,
    `bucket=minute&group_by=topic,status,code&${range}`,
    `bucket=day&group_by=destination_id,status&${range}`,
    `bucket=hour&destination_id=dest_7&group_by=code&${range}`,
    `bucket=hour&topic=order.paid&status=failed&group_by=code&${range}`,
  ];
  for (const q of queries) {
    const times: number[] = [];
    let points = 0;
    let total = 0;
    for (let i = 0; i < 120; i++) {
      const t = performance.now();
      const r = await app.inject({
        method: 'GET',
        url: `/api/v1/tenants/acme/metrics/attempts?${q}`,
        headers: { authorization: 'Bearer bench-key' },
      });
      times.push(performance.now() - t);
      if (r.statusCode !== 200) throw new Error(`${r.statusCode} ${r.body}`);
      const body = r.json() as { series: unknown[]; total: number };
      points = body.series.length;
      total = body.total;
    }
    const sorted = times.slice(20).sort((a, b) => a - b); // the first 20 warm up
    const at = (p: number) => (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number).toFixed(1);
    console.log(
      `${q.replace(`&${range}`, '').padEnd(52)} ${String(points).padStart(5)} points, total ${total}: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`,
    );
  }
  await app.close();
} finally {
  await db.destroy();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
