// Migrating as deployments do it: every service migrates at start, so on a fresh database several
// processes migrate at once. Each round here starts 8 `npm run migrate` processes (migrate-cli) on
// one fresh database together: all must succeed and leave the whole schema and a sane knex lock
// table. A lock table left stuck (two rows, or a lock no process holds) is put right by the next
// migrate, on Postgres and on the embedded database.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { openEmbeddedDb } from '../src/db/embedded.ts';
import { createDb, type Knex, migrateLatest } from '../src/db/index.ts';
import { MIGRATIONS } from '../src/db/migrations/index.ts';
import { createTestDatabase, ROOT } from '../src/testing/index.ts';

const PROCESSES = 8;
const ROUNDS = 4;

function migrateProcess(url: string): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [`${ROOT}shared/src/db/migrate-cli.ts`], {
    cwd: ROOT,
    // DATABASE_URL alone: the command needs nothing else.
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out })));
}

/** What a migrated database must hold: every migration once, and knex's lock table with one free row. */
async function checkSchema(t: Test, db: Knex, label: string): Promise<void> {
  const names = ((await db('knex_migrations').select('name').orderBy('id')) as { name: string }[]).map((r) => r.name);
  t.same(
    names,
    MIGRATIONS.map((m) => m.name),
    `${label}: every migration applied, once`,
  );
  t.same(await db('knex_migrations_lock').select('is_locked'), [{ is_locked: 0 }], `${label}: one lock row, free`);
  for (const table of ['tenants', 'destinations', 'events', 'attempts', 'deliveries']) {
    t.ok(await db.schema.hasTable(table), `${label}: ${table} exists`);
  }
}

t.test(`${PROCESSES} processes migrating one fresh database at once, ${ROUNDS} rounds`, async (t) => {
  for (let round = 1; round <= ROUNDS; round++) {
    const url = await createTestDatabase(t);
    const runs = await Promise.all(Array.from({ length: PROCESSES }, () => migrateProcess(url)));
    const failed = runs.filter((r) => r.code !== 0);
    t.same(
      failed.map((r) => r.out.trim()),
      [],
      `round ${round}: all ${PROCESSES} succeed`,
    );
    const applied = runs.filter((r) => r.out.startsWith('applied:'));
    t.equal(applied.length, 1, `round ${round}: one process applied the migrations, the others found them done`);
    const db = createDb({ url, poolMax: 1 });
    try {
      await checkSchema(t, db, `round ${round}`);
    } finally {
      await db.destroy();
    }
  }
});

/** Puts knex's lock table in a state a race or a killed migrate leaves behind. */
async function wedge(db: Knex, rows: number[]): Promise<void> {
  if (!(await db.schema.hasTable('knex_migrations_lock'))) {
    // As the race left it: knex's tables made, no migration applied.
    await db.schema.createTable('knex_migrations', (tb) => {
      tb.increments();
      tb.string('name');
      tb.integer('batch');
      tb.timestamp('migration_time');
    });
    await db.schema.createTable('knex_migrations_lock', (tb) => {
      tb.increments('index').primary();
      tb.integer('is_locked');
    });
  }
  await db('knex_migrations_lock').del();
  if (rows.length) await db('knex_migrations_lock').insert(rows.map((is_locked) => ({ is_locked })));
}

t.test('a stuck lock table is put right by the next migrate', async (t) => {
  const url = await createTestDatabase(t);
  const db = createDb({ url, poolMax: 2 });
  t.teardown(() => db.destroy());
  await wedge(db, [0, 0]);
  await t.rejects(db.migrate.latest(), /already locked/, 'knex alone: two lock rows stop every migrate, as seen');
  const warnings: object[] = [];
  await migrateLatest(db, { warn: (fields) => warnings.push(fields) });
  await checkSchema(t, db, 'two rows, no migration applied');
  t.same(warnings, [{ lock_table: '2 row(s), 0 locked' }], 'said so');

  await wedge(db, [1]);
  await migrateLatest(db);
  await checkSchema(t, db, 'a lock left held by a killed migrate');

  await wedge(db, []);
  const run = await migrateProcess(url);
  t.equal(run.code, 0, 'npm run migrate: no lock row');
  t.equal(run.out.trim(), 'migrate: migration lock table was stuck; put right (0 row(s), 0 locked)\ndatabase is up to date');
  await checkSchema(t, db, 'no lock row');
});

t.test('the embedded database migrates, and its stuck lock table is put right', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-migrate-lock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const e = await openEmbeddedDb(dir);
  t.teardown(() => e.close());
  await migrateLatest(e.db);
  await checkSchema(t, e.db, 'PGlite, fresh');
  await wedge(e.db, [1, 0]);
  await migrateLatest(e.db);
  await checkSchema(t, e.db, 'PGlite, two rows, one locked');
});
