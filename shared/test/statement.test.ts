// Prepared statements (db/statement.ts): prepared on a connection by its first call and bound again by
// the next ones, on Postgres and on PGlite; one text per name.
import t, { type Test } from 'tap';
import type { Knex } from '../src/db/index.ts';
import { statement } from '../src/db/statement.ts';
import { onBothDatabases } from '../src/testing/databases.ts';

const SQUARES = statement('test_squares', 'SELECT n, n * n AS square FROM unnest(?::int[]) AS x(n) ORDER BY n');

onBothDatabases(t, 'a statement is prepared once per connection and bound with each call', async (t: Test, db: Knex) => {
  // One transaction: one connection, so the second call finds the statement the first prepared.
  await db.transaction(async (tx) => {
    const first = await SQUARES.run<{ rows: Array<{ n: number; square: number }> }>(tx, [[3, 1, 2]]);
    t.same(
      first.rows.map((r) => [r.n, r.square]),
      [
        [1, 1],
        [2, 4],
        [3, 9],
      ],
    );
    const second = await SQUARES.run<{ rows: Array<{ square: number }> }>(tx, [[7]]);
    t.same(
      second.rows.map((r) => r.square),
      [49],
      'a list of another length binds to the same statement',
    );
    const { rows } = await tx.raw<{ rows: Array<{ name: string; statement: string }> }>(
      'SELECT name, statement FROM pg_prepared_statements WHERE name = ?',
      ['test_squares'],
    );
    t.equal(rows.length, 1, 'the connection holds it under its name');
    t.match(rows[0]?.statement, /unnest\(\$1::int\[\]\)/, 'with its text as node-postgres sent it');
  });
});

t.test('a name belongs to one text', async (t) => {
  t.doesNotThrow(() => statement('test_squares', SQUARES.sql), 'the same text again (a module loaded twice) is fine');
  t.throws(() => statement('test_squares', 'SELECT 1'), /test_squares is already used for another text/);
});
