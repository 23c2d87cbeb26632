import t from 'tap';
import { createDb, type Knex, migrateLatest } from '../src/db/index.ts';
import {
  dropExpiredPartitions,
  EXPIRING_TABLES,
  ensurePartitions,
  listPartitions,
  maintainPartitions,
  PARTITIONED_TABLES,
  startPartitionMaintenance,
} from '../src/db/partitions.ts';
import { createTestDatabase } from '../src/testing/index.ts';

const DAY = 86_400_000;
const midnight = (ms: number) => Math.floor(ms / DAY) * DAY;

async function freshDb(t: Parameters<typeof createTestDatabase>[0]): Promise<Knex> {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 4 });
  t.teardown(() => db.destroy());
  await migrateLatest(db);
  return db;
}

async function insertAttempt(db: Knex, time: Date): Promise<void> {
  await db('attempts').insert({
    id: `0190b3c4-0000-7000-8000-${String(time.getTime()).padStart(12, '0').slice(-12)}`,
    tenant_id: 't',
    destination_id: 'd',
    event_id: 'e',
    topic: 'x',
    status: 'success',
    code: '200',
    attempt_number: 1,
    time,
  });
}

async function rowsIn(db: Knex, table: string): Promise<Record<string, number>> {
  const r = await db.raw(`SELECT tableoid::regclass::text AS p, count(*)::int AS n FROM ?? GROUP BY 1`, [table]);
  return Object.fromEntries((r.rows as { p: string; n: number }[]).map((x) => [x.p, x.n]));
}

/** Ranges (oldest first) follow each other without gap or overlap. */
function contiguous(ranges: { from: number; to: number }[]): boolean {
  return ranges.every((r, i) => i === 0 || r.from === (ranges[i - 1] as { to: number }).to);
}

/** Ranges (oldest first) do not overlap. */
function disjoint(ranges: { from: number; to: number }[]): boolean {
  return ranges.every((r, i) => i === 0 || r.from >= (ranges[i - 1] as { to: number }).to);
}

t.test('a migrated database has daily partitions from today to a week ahead, and a default partition', async (t) => {
  const db = await freshDb(t);
  const today = midnight(Date.now());
  for (const { table } of PARTITIONED_TABLES) {
    const parts = await listPartitions(db, table);
    t.equal(parts[0]?.from, today, `${table} starts today`);
    t.ok((parts.at(-1)?.to ?? 0) >= Date.now() + 7 * DAY, `${table} reaches a week ahead`);
    t.ok(
      parts.every((p) => p.to - p.from === DAY),
      `${table}: one day each`,
    );
    t.ok(contiguous(parts), `${table}: contiguous`);
    t.equal(parts[0]?.name, `${table}_p${new Date(today).toISOString().slice(0, 10).replaceAll('-', '')}`);
    const def = await db.raw(`SELECT 1 FROM pg_class WHERE relname = ?`, [`${table}_default`]);
    t.equal(def.rows.length, 1, `${table} has a default partition`);
  }
  t.same(await ensurePartitions(db, new Date()), [], 'running again creates nothing');
  // An insert never fails, whatever its time.
  await insertAttempt(db, new Date('1999-01-01T00:00:00Z'));
  await insertAttempt(db, new Date('2999-01-01T00:00:00Z'));
  await insertAttempt(db, new Date());
  const where = await rowsIn(db, 'attempts');
  t.equal(where.attempts_default, 2, 'far past and far future land in the default partition');
  t.equal(
    Object.values(where).reduce((a, b) => a + b, 0),
    3,
  );
});

t.test('creating a partition moves the rows of its range out of the default partition', async (t) => {
  const db = await freshDb(t);
  const now = new Date();
  const threeDaysAgo = new Date(now.getTime() - 3 * DAY);
  await insertAttempt(db, threeDaysAgo);
  await db('events').insert({ tenant_id: 't', id: 'e', topic: 'x', time: '2000-01-01T00:00:00Z', data: '{}', received_at: threeDaysAgo });
  t.same(await rowsIn(db, 'attempts'), { attempts_default: 1 });
  const created = await ensurePartitions(db, now, { behindDays: 4 });
  t.equal(created.length, 12, 'four days back for each of three tables');
  const name = `attempts_p${new Date(midnight(threeDaysAgo.getTime())).toISOString().slice(0, 10).replaceAll('-', '')}`;
  t.same(await rowsIn(db, 'attempts'), { [name]: 1 }, 'moved into its day');
  t.same(Object.keys(await rowsIn(db, 'events')), [name.replace('attempts', 'events')], 'events by received_at, not event time');
  for (const { table } of PARTITIONED_TABLES) t.ok(contiguous(await listPartitions(db, table)), `${table}: contiguous`);
  // Indexes came along with the attach.
  const idx = await db.raw(`SELECT count(*)::int AS n FROM pg_indexes WHERE tablename = ?`, [name]);
  t.equal(idx.rows[0].n, 5, 'the new partition carries the primary key and the four indexes');
  const stats = await db.raw(`SELECT stxkind::text AS kind FROM pg_statistic_ext WHERE stxrelid = ?::regclass`, [name]);
  t.same(
    stats.rows.map((r: { kind: string }) => r.kind),
    ['{f}'],
    'and the tenant -> destination dependency statistics',
  );
});

t.test('retention drops whole expired partitions and expired default rows', async (t) => {
  const db = await freshDb(t);
  const now = new Date();
  await ensurePartitions(db, now, { behindDays: 10 });
  await insertAttempt(db, new Date(now.getTime() - 9 * DAY));
  await insertAttempt(db, new Date(now.getTime() - 2 * DAY));
  await insertAttempt(db, new Date('1999-01-01T00:00:00Z')); // default partition
  t.same(await dropExpiredPartitions(db, now, 0), [], 'retention 0 keeps everything');
  const before = await listPartitions(db, 'attempts');
  const dropped = await dropExpiredPartitions(db, now, 5);
  const cutoff = now.getTime() - 5 * DAY;
  const after = await listPartitions(db, 'attempts');
  t.ok(dropped.length >= 3 * 5, `${dropped.length} partitions dropped`);
  t.same(
    after.map((p) => p.name),
    before.filter((p) => p.to > cutoff).map((p) => p.name),
    'exactly the partitions ending at or before the cutoff are gone',
  );
  t.ok((after[0]?.from ?? Infinity) <= cutoff, 'the partition holding the cutoff stays (rows live retention to retention + 1 day)');
  const left = await db('attempts').select('time');
  t.same(
    left.map((r: { time: Date }) => r.time.getTime()),
    [now.getTime() - 2 * DAY],
    'the expired rows are gone, the recent one stays',
  );
  t.same(await dropExpiredPartitions(db, now, 5), [], 'nothing more to drop');
});

t.test('retention also deletes expired counts and operator events', async (t) => {
  const db = await freshDb(t);
  const now = new Date();
  const old = new Date(now.getTime() - 6 * DAY);
  const recent = new Date(now.getTime() - 4 * DAY);
  for (const at of [old, recent]) {
    await db('attempt_counts_minute').insert({ tenant_id: 't', minute: at, topic: 'x', status: 'success', code: '200', count: 1 });
    await db('attempt_counts_hour').insert({
      tenant_id: 't',
      hour: at,
      destination_id: 'd',
      topic: 'x',
      status: 'success',
      code: '200',
      count: 1,
    });
    await db('event_counts').insert({ tenant_id: 't', minute: at, topic: 'x', count: 1 });
    await db('operator_events').insert({
      tenant_id: 't',
      id: `op_${at.getTime()}`,
      destination_id: 'd',
      type: 'alert.consecutive_failure',
      time: at,
      data: {},
    });
  }
  await dropExpiredPartitions(db, now, 0);
  for (const { table } of EXPIRING_TABLES) t.equal(await count(db, table), 2, `${table}: retention 0 keeps everything`);
  await dropExpiredPartitions(db, now, 5);
  for (const { table, column } of EXPIRING_TABLES) {
    const left = await db(table).select(column);
    t.same(
      left.map((r: Record<string, Date>) => (r[column] as Date).getTime()),
      [recent.getTime()],
      `${table}: the expired row is gone, the recent one stays`,
    );
  }
});

async function count(db: Knex, table: string): Promise<number> {
  const [r] = await db(table).count<{ n: string }[]>({ n: '*' });
  return Number(r?.n);
}

t.test('a changed interval continues where the existing partitions end', async (t) => {
  const db = await freshDb(t);
  const now = new Date();
  const daily = await listPartitions(db, 'deliveries');
  await ensurePartitions(db, now, { intervalDays: 7, aheadDays: 30 });
  const all = await listPartitions(db, 'deliveries');
  t.same(
    all.slice(0, daily.length).map((p) => p.name),
    daily.map((p) => p.name),
    'existing partitions are kept',
  );
  t.ok(contiguous(all), 'no gap, no overlap');
  t.ok((all.at(-1)?.to ?? 0) >= now.getTime() + 30 * DAY);
  t.ok(
    all.slice(daily.length + 1).every((p) => p.to - p.from === 7 * DAY && p.from % (7 * DAY) === 0),
    'new ones are weekly, on the weekly grid',
  );
});

t.test('concurrent maintenance runs do not collide', async (t) => {
  const db = await freshDb(t);
  const db2 = createDb({ url: (db.client.config as { connection: string }).connection, poolMax: 2 });
  t.teardown(() => db2.destroy());
  const now = new Date(Date.now() + 20 * DAY);
  const [a, b] = await Promise.all([ensurePartitions(db, now), ensurePartitions(db2, now)]);
  t.equal(new Set([...a, ...b]).size, a.length + b.length, 'each partition created once');
  t.ok(a.length + b.length > 0);
  for (const { table } of PARTITIONED_TABLES) t.ok(disjoint(await listPartitions(db, table)), `${table}: no overlap`);

  const pass = await maintainPartitions(db, { retentionDays: 3, now: () => now });
  t.ok(pass.dropped.length > 0, 'maintainPartitions applies retention');
  const logged: string[] = [];
  const loop = startPartitionMaintenance(db, {
    retentionDays: 3,
    aheadDays: 30,
    everyMs: 60_000,
    log: { info: (_o, msg) => logged.push(msg), warn: (_o, msg) => logged.push(`warn: ${msg}`), debug: () => {} },
  });
  await loop.stop();
  t.same(logged, ['partition maintenance'], 'the loop runs a pass at once and stops cleanly');
});
