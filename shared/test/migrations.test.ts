// Migrations as they meet databases of different ages: 004 gives every table of the deliveries and
// attempts trees the tenant -> destination statistics whether or not an earlier 001 had created them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openEmbeddedDb } from '../src/db/embedded.ts';
import { eraseTenant } from '../src/db/erasure.ts';
import { createDb, type Knex, migrateLatest } from '../src/db/index.ts';
import { MIGRATIONS } from '../src/db/migrations/index.ts';
import { ensurePartitions } from '../src/db/partitions.ts';
import { createTestDatabase } from '../src/testing/index.ts';

const DAY = 86_400_000;

async function emptyDb(t: Parameters<typeof createTestDatabase>[0]): Promise<Knex> {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 4 });
  t.teardown(() => db.destroy());
  return db;
}

/** Applies the migrations up to and including `name`. */
async function migrateTo(db: Knex, name: string): Promise<void> {
  for (const m of MIGRATIONS) {
    await db.migrate.up({ name: m.name });
    if (m.name === name) return;
  }
}

/** The dependency statistics on (tenant_id, destination_id) of every table of the two trees, by table. */
async function statistics(db: Knex): Promise<Map<string, string[]>> {
  const res = await db.raw(
    `SELECT c.relname AS table, s.stxname AS stat
       FROM (SELECT relid FROM pg_partition_tree('deliveries') UNION ALL SELECT relid FROM pg_partition_tree('attempts')) t
       JOIN pg_class c ON c.oid = t.relid
       LEFT JOIN pg_statistic_ext s ON s.stxrelid = c.oid AND 'f' = ANY (s.stxkind)
      ORDER BY 1, 2`,
  );
  const out = new Map<string, string[]>();
  for (const r of res.rows as { table: string; stat: string | null }[]) {
    const list = out.get(r.table) ?? [];
    if (r.stat) list.push(r.stat);
    out.set(r.table, list);
  }
  return out;
}

/** The tables that do not have exactly one (none, when all is well). */
const notOne = (stats: Map<string, string[]>) => [...stats].filter(([, s]) => s.length !== 1);

t.test('a new database gets the statistics on every table of both trees', async (t) => {
  const db = await emptyDb(t);
  await migrateLatest(db);
  const stats = await statistics(db);
  t.same(notOne(stats), [], 'fresh: one on every table');
  t.same(stats.get('deliveries'), ['deliveries_tenant_destination']);
  t.same(stats.get('attempts_default'), ['attempts_default_tenant_destination']);
  t.ok(stats.size > 4, 'range partitions are counted too');
  const made = (await ensurePartitions(db, new Date(Date.now() - 3 * DAY), { aheadDays: 0 })).filter((n) => !n.startsWith('events'));
  t.equal(made.length, 2, 'a deliveries and an attempts partition made later');
  for (const name of made) t.equal((await statistics(db)).get(name)?.length, 1, `${name} copies its parent's`);
});

t.test('a database migrated by a 001 without statistics gets them from 004', async (t) => {
  const db = await emptyDb(t);
  await migrateTo(db, '003_attempt_event_partition');
  t.ok(
    [...(await statistics(db)).values()].every((s) => s.length === 0),
    'none before 004',
  );
  await ensurePartitions(db, new Date(), { behindDays: 2 }); // partitions made meanwhile have none either
  await migrateLatest(db);
  t.same(notOne(await statistics(db)), [], 'after 004: one on every table');
});

t.test('a database whose 001 created them converges without duplicates', async (t) => {
  const db = await emptyDb(t);
  await migrateTo(db, '003_attempt_event_partition');
  // What 001 used to create; partitions made afterwards copied them under names of their own.
  for (const table of ['deliveries', 'deliveries_default', 'attempts', 'attempts_default']) {
    await db.raw('CREATE STATISTICS ?? (dependencies) ON tenant_id, destination_id FROM ??', [`${table}_tenant_destination`, table]);
  }
  await ensurePartitions(db, new Date(), { behindDays: 2 });
  const before = await statistics(db);
  await migrateLatest(db);
  const after = await statistics(db);
  t.same(notOne(after), [], 'after 004: one on every table');
  for (const [table, s] of before) if (s.length) t.same(after.get(table), s, `${table} keeps its own`);
});

t.test('004 down drops them all, up brings them back', async (t) => {
  const db = await emptyDb(t);
  await migrateLatest(db);
  await ensurePartitions(db, new Date(), { behindDays: 2 }); // copies named by Postgres
  await db.migrate.down({ name: '004_tenant_destination_statistics' });
  t.ok(
    [...(await statistics(db)).values()].every((s) => s.length === 0),
    'none after down',
  );
  await migrateLatest(db);
  t.same(notOne(await statistics(db)), [], 'up again: one on every table');
});

t.test('the embedded database runs 004 too', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-migrate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const e = await openEmbeddedDb(dir);
  t.teardown(() => e.close());
  await migrateLatest(e.db);
  t.same(notOne(await statistics(e.db)), [], 'PGlite: one on every table');
  // Started with PGlite's own parameters and a small buffer cache (embedded.ts, START_PARAMS).
  const setting = async (name: string) => ((await e.db.raw(`show ${name}`)) as { rows: Record<string, string>[] }).rows[0]?.[name];
  t.equal(await setting('shared_buffers'), '16MB', 'a 16 MB buffer cache');
  t.equal(await setting('search_path'), 'public', "PGlite's own parameters kept");
  t.equal(await setting('max_parallel_workers'), '0');
});

t.test('005 adds events.payload_bytes, NULL on the rows already there; down drops it', async (t) => {
  const db = await emptyDb(t);
  await migrateTo(db, '004_tenant_destination_statistics');
  await db('events').insert({ tenant_id: 't', id: 'old', topic: 'x', time: new Date(), data: '{"a":1}' });
  await migrateLatest(db);
  await db('events').insert({ tenant_id: 't', id: 'new', topic: 'x', time: new Date(), data: '{"a":1}', payload_bytes: 7 });
  const rows = (await db('events').select('id', 'payload_bytes').orderBy('id')) as { id: string; payload_bytes: number | null }[];
  t.same(rows, [
    { id: 'new', payload_bytes: 7 },
    { id: 'old', payload_bytes: null },
  ]);
  await db.migrate.down({ name: '005_event_payload_bytes' });
  t.notOk(await db.schema.hasColumn('events', 'payload_bytes'), 'gone after down');
});

t.test('014 adds the ordered spill: one row per record position, in partition order; down drops it', async (t) => {
  const db = await emptyDb(t);
  await migrateLatest(db);
  const row = (offset: number, event_id: string) => ({
    tenant_id: 't',
    destination_id: 'd',
    topic: 'deliveries.webhook',
    partition: 0,
    offset,
    type: 'webhook',
    event_id,
    delivery: '{}',
  });
  await db('ordered_spill').insert([row(10, 'b'), row(9, 'a')]);
  // A record appended again (read again after a crash) is the row already there.
  await db('ordered_spill').insert(row(9, 'a')).onConflict(['tenant_id', 'destination_id', 'topic', 'partition', 'offset']).ignore();
  const rows = (await db('ordered_spill').orderBy('offset').select('event_id')) as { event_id: string }[];
  t.same(
    rows.map((r) => r.event_id),
    ['a', 'b'],
  );
  await db('ordered_drains').insert({ tenant_id: 't', destination_id: 'd', owner: 'x', until: new Date() });
  await db.migrate.down({ name: '014_ordered_spill' });
  t.notOk(await db.schema.hasTable('ordered_spill'), 'spill gone after down');
  t.notOk(await db.schema.hasTable('ordered_drains'), 'drains gone after down');
});

t.test('015 adds the unwritten attempts to ordered positions, none on the rows already there; down drops them', async (t) => {
  const db = await emptyDb(t);
  await migrateTo(db, '014_ordered_spill');
  await db('ordered_positions').insert({ tenant_id: 't', destination_id: 'old', topic: 'deliveries.webhook', partition: 0, offset: 7 });
  await migrateLatest(db);
  await db('ordered_positions').insert({
    tenant_id: 't',
    destination_id: 'new',
    topic: 'deliveries.webhook',
    partition: 0,
    offset: 8,
    attempts: '[{"id":"a"}]',
  });
  const rows = (await db('ordered_positions').orderBy('destination_id').select('destination_id', 'attempts', 'ended_at')) as {
    destination_id: string;
    attempts: string | null;
    ended_at: Date | null;
  }[];
  t.same(
    rows.map((r) => [r.destination_id, r.attempts]),
    [
      ['new', '[{"id":"a"}]'],
      ['old', null],
    ],
  );
  t.ok(
    rows.every((r) => r.ended_at instanceof Date),
    'every row has a time for erasure',
  );
  // A deleted tenant's erasure takes them (the attempts hold its events' ids and its destinations' answers).
  await db('ordered_positions').insert({ tenant_id: 'u', destination_id: 'kept', topic: 'deliveries.webhook', partition: 0, offset: 1 });
  await eraseTenant(db, 't', new Date(Date.now() + 60_000));
  t.same(await db('ordered_positions').pluck('destination_id'), ['kept'], "the tenant's positions erased, another's kept");
  await db.migrate.down({ name: '015_ordered_attempts' });
  t.notOk(await db.schema.hasColumn('ordered_positions', 'attempts'), 'gone after down');
  t.notOk(await db.schema.hasColumn('ordered_positions', 'ended_at'));
});

t.test('016 indexes the scheduled events only, on every partition of events; down drops it', async (t) => {
  const db = await emptyDb(t);
  await migrateLatest(db);
  const indexes = async () =>
    (
      (await db.raw(`SELECT tablename, indexdef FROM pg_indexes WHERE indexdef LIKE '%(deliver_at)%' ORDER BY tablename`)).rows as {
        tablename: string;
        indexdef: string;
      }[]
    ).map((r) => [r.tablename, /WHERE \(deliver_at IS NOT NULL\)/.test(r.indexdef)]);
  const found = await indexes();
  t.ok(found.length >= 2, `the parent and its partitions: ${JSON.stringify(found)}`);
  t.ok(
    found.every(([, partial]) => partial),
    'partial: events without deliver_at are not in it',
  );
  await db.migrate.down({ name: '016_scheduled_events_index' });
  t.same(await indexes(), [], 'gone after down');
});

t.test('017 drops the block count the spill replaced; down brings it back', async (t) => {
  const db = await emptyDb(t);
  await migrateLatest(db);
  t.notOk(await db.schema.hasColumn('ordered_blocks', 'waiting'), 'gone');
  await db('ordered_blocks').insert({ tenant_id: 't', destination_id: 'd', event_id: 'e', attempt_number: 1, next_attempt_at: new Date() });
  await db.migrate.down({ name: '017_ordered_blocks_waiting' });
  t.same(await db('ordered_blocks').pluck('waiting'), [0], 'back after down, 0 on the rows there');
});

t.test('018 indexes each spill in the order it was spilled; down drops it', async (t) => {
  const db = await emptyDb(t);
  await migrateLatest(db);
  const index = async () =>
    ((await db.raw(`SELECT indexdef FROM pg_indexes WHERE indexname = 'ordered_spill_arrival'`)).rows as { indexdef: string }[]).map(
      (r) => r.indexdef,
    );
  const [def] = await index();
  t.match(def, /\(tenant_id, destination_id, spilled_at, topic, partition, "offset"\)/);
  await db.migrate.down({ name: '018_ordered_spill_arrival' });
  t.same(await index(), [], 'gone after down');
});
