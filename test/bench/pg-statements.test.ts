// The benchmark's Postgres statement table (--pg-statements): read from a real server's
// pg_stat_statements (the test cluster loads it as the benchmark's does), the runner's own queries
// left out, and rendered per second and per row.
import pg from 'pg';
import t from 'tap';
import {
  type PgStatement,
  type PgStatements,
  RUNNER_TAG,
  readStatements,
  resetStatements,
  squash,
  statementsMarkdown,
} from '../../bench/lib/pg-statements.ts';
import { markdown, type RunResult } from '../../bench/lib/report.ts';
import { createTestDatabase, type Teardown } from '@switchyard/shared/testing/index.ts';
import { recorded } from './recorded.ts';

async function connect(t: Teardown): Promise<pg.Client> {
  const db = new pg.Client({ connectionString: await createTestDatabase(t) });
  await db.connect();
  t.teardown(() => db.end());
  return db;
}

t.test("a window's statements are counted from the reset, this database's only, the runner's left out", async (t) => {
  const db = await connect(t);
  const other = await connect(t);
  await db.query('CREATE TABLE things (n int)');
  await other.query('CREATE TABLE things (n int)');
  await db.query('INSERT INTO things VALUES (0)'); // before the window
  await resetStatements(db);
  for (let i = 1; i <= 5; i++) await db.query('INSERT INTO things VALUES ($1)', [i]);
  await db.query('UPDATE things SET n = n + 1 WHERE n > 2');
  await db.query('SELECT n FROM things WHERE n IN ($1, $2)', [1, 2]);
  await db.query('SELECT n FROM things WHERE n IN ($1, $2, $3)', [1, 2, 3]);
  await other.query('INSERT INTO things VALUES (1)'); // another database
  await db.query(`SELECT count(*) FROM things ${RUNNER_TAG}`);

  const s = await readStatements(db, 10);
  const insert = s.top.find((q) => /^INSERT INTO things VALUES/.test(q.query));
  t.ok(insert, 'the insert is there');
  t.equal(insert?.calls, 5, 'counted from the reset, not before, and not the other database');
  t.equal(insert?.rows, 5);
  const update = s.top.find((q) => /^UPDATE things/.test(q.query));
  t.equal(update?.rows, 3);
  const lists = s.top.filter((q) => q.query.startsWith('SELECT n FROM things'));
  t.same(
    lists.map((q) => [q.query, q.calls]),
    [['SELECT n FROM things WHERE n IN (...)', 2]],
    'one statement whatever the length of its list',
  );
  t.notOk(
    s.top.some((q) => /count\(\*\)|pg_stat_statements/.test(q.query)),
    "the runner's queries are left out",
  );
  t.equal(
    s.totalCalls,
    s.top.reduce((n, q) => n + q.calls, 0),
  );
  t.ok(s.totalMs > 0);
  t.ok((insert?.planMs ?? 0) > 0, 'planning time is read (track_planning, as the benchmark loads it)');
  t.same(
    s.top.map((q) => q.totalMs),
    s.top.map((q) => q.totalMs).sort((a, b) => b - a),
    'most expensive first',
  );

  await resetStatements(db);
  const after = await readStatements(db, 1);
  t.notOk(
    after.top.some((q) => q.query.startsWith('INSERT INTO things')),
    'a reset empties it',
  );
});

const sample: PgStatements = {
  windowS: 40,
  totalCalls: 4_000,
  totalMs: 20_000,
  top: [
    { calls: 800, totalMs: 8_000, rows: 80_000, query: 'INSERT INTO attempts SELECT * FROM json_to_recordset($1::json)' },
    { calls: 3_200, totalMs: 2_000, rows: 3_200, query: "SELECT a || b FROM t WHERE c = '`x`'" },
  ],
};

t.test('a parenthesised list of parameters becomes (...), repeated ones one (...), other parentheses stay', async (t) => {
  t.equal(
    squash('select a from t where (x, y) in (($1, $2), ($3, $4)) and z in ($5)'),
    'select a from t where (x, y) in ((...)) and z in (...)',
  );
  t.equal(
    squash('insert into h (a, b) values ($1, $2), ($3, $4), ($5, $6) on conflict (a) do nothing'),
    'insert into h (a, b) values (...) on conflict (a) do nothing',
  );
  t.equal(squash('SELECT count(*)\n  FROM t  WHERE a = $1 AND b = lower($2)'), 'SELECT count(*) FROM t WHERE a = $1 AND b = lower(...)');
});

t.test('the table gives shares, rates, cost per call and per row', async (t) => {
  const md = statementsMarkdown(sample);
  t.match(md, /^100 statements\/s, 0\.5 s of execution per second of the window/);
  // 8,000 of 20,000 ms; 800 calls and 80,000 rows in 40 s; 10 ms a call; 100 µs a row.
  t.match(md, /\| 40\.0% \| 20 \| 10 \| 2,000 \| 100 \| `INSERT INTO attempts/);
  t.match(md, /\| 10\.0% \| 80 \| 0\.625 \| 80 \| 625 \| /);
  t.ok(md.includes("`SELECT a \\|\\| b FROM t WHERE c = ''x''`"), 'pipes escaped, backticks replaced: the row stays one cell');
});

t.test('planning time per call is a column when the run recorded it', async (t) => {
  const md = statementsMarkdown({ ...sample, planMs: 400, top: [{ ...(sample.top[0] as PgStatement), planMs: 400 }] });
  t.match(md, /0\.5 s of execution, 0\.01 s of planning per second/);
  t.match(md, /\| ms per call \| plan ms per call \|/);
  t.match(md, /\| 40\.0% \| 20 \| 10 \| 0\.5 \| 2,000 \| 100 \| `INSERT INTO attempts/);
});

t.test('the summary has the section only for phases that read statements', async (t) => {
  const run = recorded('stack-no-pg-statements');
  t.notMatch(markdown(run, 'x.svg'), /## Postgres statements/);
  const phase = run.phases[1] as RunResult['phases'][number];
  phase.pgStatements = sample;
  const md = markdown(run, 'x.svg');
  t.match(md, /## Postgres statements\n\n[^\n]+\n\n### tenants \/ main\n\n100 statements\/s/);
});
