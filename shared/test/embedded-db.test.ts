// The embedded database (db/embedded.ts): PGlite on a thread of its own behind node-postgres. A
// connection the pool opens again starts clean, the event loop turns while a query runs, and a
// process that never closes the database still exits.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { openEmbeddedDb } from '../src/db/embedded.ts';
import { type Knex, migrateLatest } from '../src/db/index.ts';
import { statement } from '../src/db/statement.ts';

const DOUBLE = statement('test_embedded_double', 'SELECT ?::int * 2 AS n');

async function open(t: Test): Promise<Knex> {
  const dir = mkdtempSync(join(tmpdir(), 'sy-embedded-db-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const e = await openEmbeddedDb(dir);
  t.teardown(() => e.close());
  return e.db;
}

/** Ends the pool's connection as a crash or an idle timeout would; the pool opens a new one next. */
async function dropConnection(db: Knex, before?: (conn: { query(sql: string): Promise<unknown> }) => Promise<void>): Promise<void> {
  const conn = await db.client.acquireConnection();
  await before?.(conn);
  await conn.end();
  await db.client.releaseConnection(conn);
}

t.test('a connection opened again starts without the statements and transaction of the last', async (t) => {
  const db = await open(t);
  await migrateLatest(db);
  t.same((await DOUBLE.run<{ rows: Array<{ n: number }> }>(db, [2])).rows, [{ n: 4 }]);
  await dropConnection(db, async (conn) => {
    await conn.query('BEGIN');
    await conn.query("INSERT INTO tenants (id, created_at, updated_at) VALUES ('left-open', now(), now())");
  });
  t.same(
    (await DOUBLE.run<{ rows: Array<{ n: number }> }>(db, [5])).rows,
    [{ n: 10 }],
    'the statement is prepared again under its name on the new connection',
  );
  t.equal((await db('tenants').where({ id: 'left-open' })).length, 0, 'the open transaction was rolled back');
  const [{ count }] = (await db.raw('SELECT count(*)::int AS count FROM pg_prepared_statements')).rows;
  t.equal(count, 1, 'the new connection holds only what it prepared');
});

t.test('the event loop turns while the database works', async (t) => {
  const db = await open(t);
  let turns = 0;
  const timer = setInterval(() => turns++, 5);
  const started = performance.now();
  await db.raw('SELECT count(*) FROM generate_series(1, 3000000)');
  const took = performance.now() - started;
  clearInterval(timer);
  t.ok(took > 20, `the query takes long enough to tell (${took.toFixed(0)} ms)`);
  t.ok(turns > 0, `timers ran during it (${turns} turns in ${took.toFixed(0)} ms)`);
});

t.test('a process that never closes the database exits when its work is done', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-embedded-db-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const script = `const { openEmbeddedDb } = await import(${JSON.stringify(import.meta.resolve('../src/db/embedded.ts'))});
    const e = await openEmbeddedDb(process.argv[1]);
    const { rows } = await e.db.raw('SELECT 41 + 1 AS n');
    console.log(rows[0].n);`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, dir]);
  t.equal(stdout.trim(), '42', 'it answered, then exited on its own');
});
