// Query benchmark: loads N attempts (default 10 million) with their events and deliveries into a
// database of its own, then measures the listing endpoints through the real gateway (in-process,
// app.inject: routing, auth, validation, SQL, JSON) and checks every query plan with EXPLAIN ANALYZE.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/switchyard bash infra/run.sh node bench/queries/run.ts
//   ... run.ts --rows 300000 --iterations 50        (a quick run)
//
// See bench/queries/README.md for every option. Not a test: nothing here fails the build.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../../shared/src/config/index.ts';
import { createCipher } from '../../shared/src/crypto.ts';
import { createDb, type Knex, migrateLatest } from '../../shared/src/db/index.ts';
import { ensurePartitions, listPartitions, type PartitionedTable } from '../../shared/src/db/partitions.ts';
import { cursorAt } from '../../shared/src/db/paging.ts';
import type { BusProducer } from '../../shared/src/bus/index.ts';
import { createLogger } from '../../shared/src/log.ts';
import { build } from '../../services/gateway/src/app.ts';

const { values: opt } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    days: { type: 'string', default: '30' },
    tenants: { type: 'string', default: '20' },
    'destinations-per-tenant': { type: 'string', default: '10' },
    iterations: { type: 'string', default: '300' },
    jobs: { type: 'string', default: '2' },
    database: { type: 'string', default: 'switchyard_bench' },
    reload: { type: 'boolean', default: false },
    drop: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const ROWS = Number(opt.rows);
const DAYS = Number(opt.days);
const TENANTS = Number(opt.tenants);
const PER_TENANT = Number(opt['destinations-per-tenant']);
const DESTS = TENANTS * PER_TENANT;
const ITER = Number(opt.iterations);
const JOBS = Number(opt.jobs);
const PER_DAY = Math.ceil(ROWS / DAYS);
const EVENTS_PER_DAY = Math.ceil(PER_DAY / 3);
const DAY = 86_400_000;
const TOPICS = ['user.created', 'user.updated', 'order.paid', 'order.refunded', 'invoice.sent'];
const out = opt.out ?? (ROWS >= 10_000_000 ? 'bench/queries/baseline.md' : undefined);

const baseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/switchyard';
const benchUrl = (() => {
  const u = new URL(baseUrl);
  u.pathname = `/${opt.database}`;
  return u.toString();
})();
const log = (...a: unknown[]) => console.log(`[${new Date().toISOString().slice(11, 19)}]`, ...a);
const today = Math.floor(Date.now() / DAY) * DAY;
const dayStart = (d: number) => today - (DAYS - 1 - d) * DAY;
const iso = (ms: number) => new Date(ms).toISOString();
const pad = (n: number, w: number) => String(n).padStart(w, '0');
const dayName = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');

// ---------------------------------------------------------------------------------------------
// Data. Day d holds PER_DAY attempts: attempt i belongs to event k = i / 3 (attempt i % 3 + 1),
// evenly spread over the day. An event goes to one destination: 30% to dest_000 (tenant_00, the
// hot destination), the rest spread over every destination. One event in ten fails all three
// attempts (status failed); the others succeed. Deliveries follow the pipeline's rule
// created_at = the event's received_at. Events carry payload_bytes as the writer stores it, so
// event listings read the sizes they cut pages by (API_PAGE_MAX_BYTES) as they do in production.

/** SQL for the destination index of event k of day d (deterministic). */
const destOf = (k: string, d: number) =>
  `(CASE WHEN abs(hashint8(${k}::bigint * 1000 + ${d})) % 10 < 3 THEN 0 ELSE abs(hashint8(${k}::bigint * 7919 + ${d})) % ${DESTS} END)`;
const tenantName = (j: string) => `'tenant_' || lpad((${j} / ${PER_TENANT})::text, 2, '0')`;
const destName = (j: string) => `'dest_' || lpad((${j})::text, 3, '0')`;
const stepUs = Math.floor((DAY * 1000) / PER_DAY); // microseconds between attempts

function loadSql(table: PartitionedTable, d: number, name: string): string {
  const start = `'${iso(dayStart(d))}'::timestamptz`;
  const topic = (k: string) => `(ARRAY['${TOPICS.join("','")}'])[abs(hashint8(${k}::bigint * 31 + ${d})) % ${TOPICS.length} + 1]`;
  const eventTime = (k: string) => `${start} + (${k}::bigint * 3 * ${stepUs}) * interval '1 microsecond'`;
  if (table === 'attempts') {
    return `
      INSERT INTO ${name} (id, tenant_id, destination_id, event_id, topic, status, code, response_data, attempt_number, manual, time, duration_ms, final, event_received_at)
      SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
             ${tenantName('j')}, ${destName('j')}, 'evt_${d}_' || k, ${topic('k')},
             CASE WHEN k % 10 = 0 THEN 'failed' ELSE 'success' END,
             CASE WHEN k % 10 = 0 THEN '503' ELSE '200' END,
             CASE WHEN k % 10 = 0 THEN '{"status":503,"body":"upstream unavailable"}'::jsonb ELSE '{"status":200,"body":"ok"}'::jsonb END,
             i % 3 + 1, i % 3 = 2, t, 20 + i % 200, i % 3 = 2, ${eventTime('k')} + interval '1 microsecond'
        FROM generate_series(0, ${PER_DAY - 1}) i,
             LATERAL (SELECT i / 3 AS k) kk,
             LATERAL (SELECT ${destOf('k', d)} AS j,
                             ${start} + (i::bigint * ${stepUs}) * interval '1 microsecond' AS t,
                             md5(i::text || '-${d}') AS h) x`;
  }
  if (table === 'events') {
    return `
      INSERT INTO ${name} (tenant_id, id, topic, time, metadata, data, payload_bytes, eligible_for_retry, destination_id, received_at, matched_destination_ids)
      SELECT ${tenantName('j')}, 'evt_${d}_' || k, ${topic('k')}, et, '{"source":"bench"}'::jsonb,
             p.data, octet_length(p.data::text) + octet_length('{"source":"bench"}'), true, NULL,
             et + interval '1 microsecond', ARRAY[${destName('j')}]
        FROM generate_series(0, ${EVENTS_PER_DAY - 1}) k,
             LATERAL (SELECT ${destOf('k', d)} AS j, ${eventTime('k')} AS et) x,
             LATERAL (SELECT jsonb_build_object('order_id', k, 'amount', k % 1000, 'note', 'benchmark payload') AS data) p`;
  }
  return `
    INSERT INTO ${name} (tenant_id, event_id, destination_id, topic, event_time, status, attempts, last_attempt_at, successful_at, created_at, updated_at)
    SELECT ${tenantName('j')}, 'evt_${d}_' || k, ${destName('j')}, ${topic('k')}, et,
           CASE WHEN k % 10 = 0 THEN 'failed' ELSE 'success' END, 3, et + interval '2 seconds',
           CASE WHEN k % 10 = 0 THEN NULL ELSE et + interval '100 milliseconds' END,
           et + interval '1 microsecond', et + interval '2 seconds'
      FROM generate_series(0, ${EVENTS_PER_DAY - 1}) k,
           LATERAL (SELECT ${destOf('k', d)} AS j, ${eventTime('k')} AS et) x`;
}

const COLUMN: Record<PartitionedTable, string> = { attempts: 'time', events: 'received_at', deliveries: 'created_at' };

/** The parent's primary key and indexes, as statements for a standalone table `name`. */
async function indexStatements(c: pg.Client, table: string, name: string): Promise<string[]> {
  const pk = await c.query(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`, [
    table,
  ]);
  const idx = await c.query(
    `SELECT i.relname, pg_get_indexdef(i.oid) AS def
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
      WHERE x.indrelid = $1::regclass AND NOT x.indisprimary`,
    [table],
  );
  return [
    `ALTER TABLE ${name} ADD ${pk.rows[0].def}`,
    ...idx.rows.map((r: { relname: string; def: string }) =>
      r.def.replace(
        /^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+/,
        (_m, u: string | undefined) => `CREATE ${u ?? ''}INDEX ${name}_${r.relname.replace(`${table}_`, '')} ON ${name}`,
      ),
    ),
  ];
}

async function load(): Promise<void> {
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [opt.database])).rowCount;
  if (exists && !opt.reload) {
    const c = new pg.Client({ connectionString: benchUrl });
    await c.connect();
    const meta = await c.query(`SELECT rows, days, tenants, per_tenant, loaded_for FROM bench_meta`).catch(() => undefined);
    await c.end();
    const m = meta?.rows[0];
    if (
      m &&
      Number(m.rows) === ROWS &&
      m.days === DAYS &&
      m.tenants === TENANTS &&
      m.per_tenant === PER_TENANT &&
      Number(m.loaded_for) === today
    ) {
      log(`reusing ${opt.database} (${ROWS} attempts loaded today); --reload to load again`);
      await admin.end();
      return;
    }
  }
  if (exists) await admin.query(`DROP DATABASE ${opt.database} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${opt.database}`);
  await admin.end();

  const db = createDb({ url: benchUrl, poolMax: 2 });
  await migrateLatest(db);
  // The migration made partitions from today on; the load brings its own for the days it fills.
  for (const table of ['attempts', 'events', 'deliveries'] as const) {
    for (const p of await listPartitions(db, table)) {
      if (p.from < dayStart(DAYS - 1) + DAY) {
        await db.raw(`ALTER TABLE ${table} DETACH PARTITION ${p.name}`);
        await db.raw(`DROP TABLE ${p.name}`);
      }
    }
  }
  await db.raw(`INSERT INTO tenants (id) SELECT 'tenant_' || lpad(t::text, 2, '0') FROM generate_series(0, ${TENANTS - 1}) t`);
  await db.raw(
    `INSERT INTO destinations (tenant_id, id, type, topics, config)
     SELECT 'tenant_' || lpad((j / ${PER_TENANT})::text, 2, '0'), 'dest_' || lpad(j::text, 3, '0'), 'webhook', '{*}', '{"url":"https://example.com/hook"}'
       FROM generate_series(0, ${DESTS - 1}) j`,
  );
  await db.raw('CREATE TABLE bench_meta (rows bigint, days int, tenants int, per_tenant int, loaded_for bigint)');
  await db.destroy();

  // Each day of each table is built as a standalone table (bulk insert, then its indexes, sorted
  // builds) and attached as a partition, JOBS at a time.
  const tasks: { table: PartitionedTable; d: number }[] = [];
  for (let d = 0; d < DAYS; d++) for (const table of ['attempts', 'events', 'deliveries'] as const) tasks.push({ table, d });
  const started = Date.now();
  let done = 0;
  async function worker(): Promise<void> {
    const c = new pg.Client({ connectionString: benchUrl });
    await c.connect();
    await c.query(`SET maintenance_work_mem = '512MB'; SET synchronous_commit = off; SET max_parallel_maintenance_workers = 0`);
    for (let task = tasks.shift(); task; task = tasks.shift()) {
      const { table, d } = task;
      const from = dayStart(d);
      const name = `${table}_p${dayName(from)}`;
      await c.query(
        `CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STATISTICS) WITH (autovacuum_enabled = false)`,
      );
      await c.query(loadSql(table, d, name));
      for (const s of await indexStatements(c, table, name)) await c.query(s);
      const col = COLUMN[table];
      await c.query(`ALTER TABLE ${name} ADD CONSTRAINT ${name}_range CHECK (${col} >= '${iso(from)}' AND ${col} < '${iso(from + DAY)}')`);
      await c.query(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES FROM ('${iso(from)}') TO ('${iso(from + DAY)}')`);
      await c.query(`ALTER TABLE ${name} DROP CONSTRAINT ${name}_range, RESET (autovacuum_enabled)`);
      await c.query(`VACUUM (ANALYZE) ${name}`);
      done++;
      if (table === 'deliveries')
        log(`day ${d + 1}/${DAYS} loaded (${done}/${DAYS * 3} tables, ${Math.round((Date.now() - started) / 1000)} s)`);
    }
    await c.end();
  }
  await Promise.all(Array.from({ length: JOBS }, worker));
  const db2 = createDb({ url: benchUrl, poolMax: 1 });
  await ensurePartitions(db2, new Date()); // the days ahead, as in production
  await db2.raw('ANALYZE attempts, events, deliveries, destinations, tenants');
  await db2.raw('INSERT INTO bench_meta VALUES (?, ?, ?, ?, ?)', [ROWS, DAYS, TENANTS, PER_TENANT, today]);
  await db2.destroy();
  loadSeconds = Math.round((Date.now() - started) / 1000);
  log(`loaded ${ROWS} attempts, ${EVENTS_PER_DAY * DAYS} events and deliveries in ${loadSeconds} s`);
}
let loadSeconds: number | undefined;

// ---------------------------------------------------------------------------------------------
// Scenarios: each yields a URL (and token) per iteration, varied so that not one page is cached.

interface Scenario {
  name: string;
  group: 'attempts' | 'events';
  next(): { url: string; token?: string };
}

const rnd = (n: number) => Math.floor(Math.random() * n);
/** Thrown by `pick` when a scenario has nothing to sample (a small data set leaves some sets empty). */
class NoSample extends Error {}
const pick = <T>(xs: readonly T[]): T => {
  if (!xs.length) throw new NoSample();
  return xs[rnd(xs.length)] as T;
};

async function scenarios(db: Knex, tokens: Map<string, string>): Promise<Scenario[]> {
  const typical = Array.from({ length: 20 }, (_, i) => 10 + i * Math.max(1, Math.floor((DESTS - 10) / 20))).filter((j) => j < DESTS);
  const destPath = (j: number) => `/api/v1/tenants/tenant_${pad(Math.floor(j / PER_TENANT), 2)}/destinations/dest_${pad(j, 3)}`;
  // Deep positions: a real row some days back in a listing, as its cursor.
  async function deep(where: string, n = 40): Promise<{ time: string; id: string; tenant: string; event: string }[]> {
    const res: { time: string; id: string; tenant: string; event: string }[] = [];
    for (let i = 0; i < n; i++) {
      const at = iso(Date.now() - (1 + Math.random() * (DAYS - 2)) * DAY);
      const r = await db.raw(
        `SELECT to_char(time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS t, id, tenant_id, event_id FROM attempts
          WHERE ${where} AND time <= ? ORDER BY time DESC, id DESC LIMIT 1`,
        [at],
      );
      const row = r.rows[0];
      if (row) res.push({ time: row.t, id: row.id, tenant: row.tenant_id, event: row.event_id });
    }
    return res;
  }
  async function deepEvents(where: string, n = 40): Promise<{ time: string; id: string; tenant: string }[]> {
    const res: { time: string; id: string; tenant: string }[] = [];
    for (let i = 0; i < n; i++) {
      const at = iso(Date.now() - (1 + Math.random() * (DAYS - 2)) * DAY);
      const r = await db.raw(
        `SELECT to_char(time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS t, id, tenant_id FROM events
          WHERE ${where} AND time <= ? ORDER BY time DESC, id DESC LIMIT 1`,
        [at],
      );
      const row = r.rows[0];
      if (row) res.push({ time: row.t, id: row.id, tenant: row.tenant_id });
    }
    return res;
  }
  const hotDeep = await deep(`tenant_id = 'tenant_00' AND destination_id = 'dest_000'`);
  const hotDeepFailed = await deep(`tenant_id = 'tenant_00' AND destination_id = 'dest_000' AND status = 'failed'`);
  const typicalDeep = await Promise.all(
    typical.slice(0, 8).map(async (j) => ({
      j,
      rows: await deep(`tenant_id = 'tenant_${pad(Math.floor(j / PER_TENANT), 2)}' AND destination_id = 'dest_${pad(j, 3)}'`, 5),
    })),
  );
  const tenantDeep = await deep(`tenant_id = 'tenant_00'`);
  const allDeep = await deep('true');
  const eventDeep = await deepEvents(`tenant_id = 'tenant_00'`);
  const events = hotDeep.map((r) => r.event);
  const someAttempts = [...hotDeep, ...allDeep].map((r) => r.id);
  const token = (tenant: string) => tokens.get(tenant) as string;
  const hour = () => {
    const from = Date.now() - (1 + Math.random() * (DAYS - 2)) * DAY;
    return `time[gte]=${encodeURIComponent(iso(from))}&time[lt]=${encodeURIComponent(iso(from + 3_600_000))}`;
  };
  const hot = destPath(0);

  return [
    { name: 'destination, first page (hot: ~3M attempts)', group: 'attempts', next: () => ({ url: `${hot}/attempts` }) },
    {
      name: 'destination, first page (typical: ~35k attempts)',
      group: 'attempts',
      next: () => ({ url: `${destPath(pick(typical))}/attempts` }),
    },
    {
      name: 'destination, deep cursor page (hot, 1-29 days back)',
      group: 'attempts',
      next: () => {
        const r = pick(hotDeep);
        return { url: `${hot}/attempts?next=${cursorAt('att', 'desc', 'next', r.time, r.id)}` };
      },
    },
    {
      name: 'destination, deep cursor page (typical)',
      group: 'attempts',
      next: () => {
        const { j, rows } = pick(typicalDeep.filter((x) => x.rows.length));
        const r = pick(rows);
        return { url: `${destPath(j)}/attempts?next=${cursorAt('att', 'desc', 'next', r.time, r.id)}` };
      },
    },
    {
      name: 'destination, previous page from a deep cursor (hot)',
      group: 'attempts',
      next: () => {
        const r = pick(hotDeep);
        return { url: `${hot}/attempts?prev=${cursorAt('att', 'desc', 'prev', r.time, r.id)}` };
      },
    },
    { name: 'destination, status=failed (hot)', group: 'attempts', next: () => ({ url: `${hot}/attempts?status=failed` }) },
    {
      name: 'destination, status=failed, deep cursor (hot)',
      group: 'attempts',
      next: () => {
        const r = pick(hotDeepFailed);
        return { url: `${hot}/attempts?status=failed&next=${cursorAt('att', 'desc', 'next', r.time, r.id)}` };
      },
    },
    {
      name: 'destination, status=failed (typical)',
      group: 'attempts',
      next: () => ({ url: `${destPath(pick(typical))}/attempts?status=failed` }),
    },
    { name: 'destination, event_id (hot)', group: 'attempts', next: () => ({ url: `${hot}/attempts?event_id=${pick(events)}` }) },
    { name: 'destination, one-hour time range (hot)', group: 'attempts', next: () => ({ url: `${hot}/attempts?${hour()}` }) },
    {
      name: 'destination, time range + status=failed (hot)',
      group: 'attempts',
      next: () => ({ url: `${hot}/attempts?${hour()}&status=failed` }),
    },
    { name: 'destination, topic filter (hot)', group: 'attempts', next: () => ({ url: `${hot}/attempts?topic=${pick(TOPICS)}` }) },
    { name: 'destination, dir=asc first page (hot)', group: 'attempts', next: () => ({ url: `${hot}/attempts?dir=asc` }) },
    { name: 'destination, include=event (hot)', group: 'attempts', next: () => ({ url: `${hot}/attempts?include=event` }) },
    {
      name: 'destination, include=event.data,destination (hot)',
      group: 'attempts',
      next: () => ({ url: `${hot}/attempts?include=event.data,destination` }),
    },
    {
      name: 'tenant token /attempts, first page (tenant_00: ~3.5M)',
      group: 'attempts',
      next: () => ({ url: '/api/v1/attempts', token: token('tenant_00') }),
    },
    {
      name: 'tenant token /attempts, deep cursor',
      group: 'attempts',
      next: () => {
        const r = pick(tenantDeep);
        return { url: `/api/v1/attempts?next=${cursorAt('att', 'desc', 'next', r.time, r.id)}`, token: token('tenant_00') };
      },
    },
    {
      name: 'tenant token /attempts, 3 destinations',
      group: 'attempts',
      next: () => ({
        url: '/api/v1/attempts?destination_id=dest_001&destination_id=dest_002&destination_id=dest_003',
        token: token('tenant_00'),
      }),
    },
    { name: 'admin /attempts, every tenant, first page', group: 'attempts', next: () => ({ url: '/api/v1/attempts' }) },
    {
      name: 'admin /attempts, every tenant, deep cursor',
      group: 'attempts',
      next: () => {
        const r = pick(allDeep);
        return { url: `/api/v1/attempts?next=${cursorAt('att', 'desc', 'next', r.time, r.id)}` };
      },
    },
    {
      name: 'admin /attempts?status=failed&topic=...',
      group: 'attempts',
      next: () => ({ url: `/api/v1/attempts?status=failed&topic=${pick(TOPICS)}` }),
    },
    {
      name: 'admin /attempts?destination_id (no tenant)',
      group: 'attempts',
      next: () => ({ url: `/api/v1/attempts?destination_id=dest_${pad(pick(typical), 3)}` }),
    },
    { name: 'one attempt by id', group: 'attempts', next: () => ({ url: `/api/v1/attempts/${pick(someAttempts)}` }) },
    { name: 'tenant events, first page (tenant_00)', group: 'events', next: () => ({ url: '/api/v1/tenant_00/events' }) },
    {
      name: 'tenant events, deep cursor',
      group: 'events',
      next: () => {
        const r = pick(eventDeep);
        return { url: `/api/v1/tenant_00/events?next=${cursorAt('evt', 'desc', 'next', r.time, r.id, r.tenant)}` };
      },
    },
    { name: 'tenant events, status=failed', group: 'events', next: () => ({ url: '/api/v1/tenant_00/events?status=failed' }) },
    {
      name: 'tenant events, destination_id (hot)',
      group: 'events',
      next: () => ({ url: '/api/v1/tenant_00/events?destination_id=dest_000' }),
    },
    {
      name: 'destination events, status=failed (hot)',
      group: 'events',
      next: () => ({ url: '/api/v1/tenant_00/destination/dest_000/events?status=failed' }),
    },
    { name: 'admin /events, every tenant', group: 'events', next: () => ({ url: '/api/v1/events' }) },
    { name: 'one event by id', group: 'events', next: () => ({ url: `/api/v1/tenant_00/events/${pick(events)}` }) },
    { name: 'deliveries of an event', group: 'events', next: () => ({ url: `/api/v1/tenant_00/events/${pick(events)}/deliveries` }) },
  ];
}

// ---------------------------------------------------------------------------------------------

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;

interface PlanCheck {
  statements: number;
  sqlMs: number;
  planMs: number;
  partitions: number;
  problems: string[];
  plan: string;
}

async function main(): Promise<void> {
  await load();
  const env = {
    API_KEY: 'bench-admin-key',
    API_JWT_SECRET: randomBytes(24).toString('hex'),
    AES_ENCRYPTION_SECRET: randomBytes(24).toString('hex'),
    DATABASE_URL: benchUrl,
    LOG_LEVEL: 'silent',
  };
  const config = loadConfig(env);
  const db = createDb({ url: benchUrl, poolMax: 4 });
  const producer: BusProducer = { send: async () => {}, sendMany: async () => {}, close: async () => {} };
  const app = await build(config, {
    db,
    producer,
    logger: createLogger('bench', 'silent'),
    cipher: createCipher(config.AES_ENCRYPTION_SECRET),
  });
  const call = async (url: string, token = config.API_KEY) => {
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    return res;
  };
  const tokens = new Map<string, string>();
  tokens.set('tenant_00', JSON.parse((await call('/api/v1/tenants/tenant_00/token')).body).token);

  // Every SQL statement a request runs, to EXPLAIN ANALYZE them.
  let captured: { sql: string; bindings: unknown[] }[] | undefined;
  db.on('query', (q: { sql: string; bindings?: unknown[] }) => captured?.push({ sql: q.sql, bindings: q.bindings ?? [] }));
  const explainClient = new pg.Client({ connectionString: benchUrl });
  await explainClient.connect();

  async function check(url: string, token?: string): Promise<PlanCheck> {
    captured = [];
    await call(url, token);
    const statements = captured;
    captured = undefined;
    const result: PlanCheck = { statements: 0, sqlMs: 0, planMs: 0, partitions: 0, problems: [], plan: '' };
    for (const s of statements) {
      if (!/^\s*select/i.test(s.sql) || /from "?tenants"?|from destinations/i.test(s.sql)) continue;
      let i = 0;
      const text = s.sql.replace(/\?/g, () => `$${++i}`);
      const r = await explainClient.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, s.bindings as unknown[]);
      const plan = r.rows.map((x: Record<string, string>) => x['QUERY PLAN']).join('\n');
      result.statements++;
      result.sqlMs += Number(/Execution Time: ([\d.]+)/.exec(plan)?.[1] ?? 0);
      result.planMs += Number(/Planning Time: ([\d.]+)/.exec(plan)?.[1] ?? 0);
      result.partitions += new Set(plan.match(/on (attempts|events|deliveries)_p\d+/g) ?? []).size;
      // A sequential scan is a problem when it reads rows (an empty partition ahead of time is not).
      const lines = plan.split('\n');
      lines.forEach((line, i) => {
        const m = /Seq Scan on ((?:attempts|events|deliveries)_\w+).*actual time=[\d.]+\.\.[\d.]+ rows=(\d+) loops=(\d+)/.exec(line);
        if (!m) return;
        const removed = Number(/Rows Removed by Filter: (\d+)/.exec(lines[i + 1] ?? '')?.[1] ?? 0);
        const read = (Number(m[2]) + removed) * Number(m[3]);
        if (read > 1000) result.problems.push(`seq scan on ${m[1]} (${read} rows)`);
      });
      for (const m of plan.matchAll(/Sort Method: [^\n]*Disk/g)) result.problems.push(`sort spilled to disk: ${m[0]}`);
      if (!result.plan) result.plan = `${text}\n\n${plan}`;
    }
    return result;
  }

  const all = await scenarios(db, tokens);
  const loadBefore = loadavg();
  const rows: string[] = [];
  const plans: string[] = [];
  log(`measuring ${all.length} scenarios, ${ITER} requests each`);
  for (const sc of all) {
    try {
      sc.next();
    } catch (err) {
      if (!(err instanceof NoSample)) throw err;
      const line = `| ${sc.name} | - | - | - | - | - | - | - | skipped: nothing to sample in this data set |`;
      rows.push(line);
      log(line);
      continue;
    }
    for (let i = 0; i < 20; i++) {
      const { url, token } = sc.next();
      await call(url, token);
    }
    const times: number[] = [];
    let models = 0;
    for (let i = 0; i < ITER; i++) {
      const { url, token } = sc.next();
      const t0 = performance.now();
      const res = await call(url, token);
      times.push(performance.now() - t0);
      if (i === 0) {
        const body = JSON.parse(res.body);
        models = Array.isArray(body) ? body.length : (body.models?.length ?? 1);
      }
    }
    times.sort((a, b) => a - b);
    const probe = sc.next();
    const pc = await check(probe.url, probe.token);
    const f = (n: number) => n.toFixed(1);
    const line = `| ${sc.name} | ${models} | ${f(quantile(times, 0.5))} | ${f(quantile(times, 0.95))} | ${f(quantile(times, 0.99))} | ${f(times.at(-1) as number)} | ${f(pc.sqlMs)} / ${f(pc.planMs)} | ${pc.partitions} | ${pc.problems.length ? pc.problems.join('; ') : 'ok'} |`;
    rows.push(line);
    log(line);
    if (plans.length < 8 && /first page \(hot|deep cursor page \(hot|status=failed \(hot\)|tenant events, first|event_id/.test(sc.name)) {
      plans.push(`### ${sc.name}\n\n\`\`\`\n${pc.plan}\n\`\`\`\n`);
    }
  }

  const loadAfter = loadavg();
  const sizes = await db.raw(`
    SELECT t, pg_size_pretty(sum(pg_table_size(c.oid))) AS heap, pg_size_pretty(sum(pg_indexes_size(c.oid))) AS indexes, sum(c.reltuples)::bigint AS rows
      FROM (VALUES ('attempts'), ('events'), ('deliveries')) v(t)
      JOIN pg_inherits i ON i.inhparent = v.t::regclass JOIN pg_class c ON c.oid = i.inhrelid
     GROUP BY t ORDER BY t`);
  const version = (await db.raw('SHOW server_version')).rows[0].server_version;
  const sharedBuffers = (await db.raw('SHOW shared_buffers')).rows[0].shared_buffers;
  const partitions = (await listPartitions(db, 'attempts')).length;
  await explainClient.end();
  await app.close();
  await db.destroy();

  const report = `# Query benchmark results

Measured by \`bench/queries/run.ts\` (see bench/queries/README.md) on ${new Date().toISOString().slice(0, 10)}:
${ROWS.toLocaleString('en')} attempts over ${DAYS} daily partitions (${partitions} attempt partitions with the ones created ahead, plus
the default), ${(EVENTS_PER_DAY * DAYS).toLocaleString('en')} events and as many deliveries; ${TENANTS} tenants x ${PER_TENANT} destinations,
30% of events to one hot destination (dest_000). PostgreSQL ${version}, shared_buffers ${sharedBuffers}, ${cpus().length} CPUs; load average ${loadBefore.map((x) => x.toFixed(1)).join(' / ')} before
measuring and ${loadAfter.map((x) => x.toFixed(1)).join(' / ')} after (1 / 5 / 15 min; other work on the machine shows in the tails).
${loadSeconds === undefined ? 'Data reused from an earlier load of the same size.' : `Load time: ${loadSeconds} s (generate_series into standalone tables, indexes built per day, then attached; ${JOBS} jobs).`}

Latency is per request through the gateway in-process (\`app.inject\`: routing, auth, parameter
validation, every SQL statement, JSON), sequential, ${ITER} requests per scenario after 20 warm-up
requests, parameters varied per request (destinations, cursors at random depths, time windows).
"SQL exec / plan" is the sum over the request's statements of EXPLAIN ANALYZE execution and planning
time for one representative request; "partitions" counts the partitions its plans touched (pruned
ones are not counted); "plan check" flags sequential scans of partitions and sorts spilled to disk.

Target: p99 <= 20 ms for a page of 100.

| scenario | rows | p50 ms | p95 ms | p99 ms | max ms | SQL exec / plan ms | partitions | plan check |
|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}

Table sizes:

| table | rows | heap | indexes |
|---|---|---|---|
${(sizes.rows as { t: string; rows: number; heap: string; indexes: string }[]).map((r) => `| ${r.t} | ${Number(r.rows).toLocaleString('en')} | ${r.heap} | ${r.indexes} |`).join('\n')}

## Representative plans

${plans.join('\n')}
`;
  if (out) {
    writeFileSync(out, report);
    log(`results written to ${out}`);
  } else {
    console.log(`\n${report}`);
  }
  if (opt.drop) {
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE ${opt.database} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
