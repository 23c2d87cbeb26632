// The database client's own notices (knex's "Acquire connection error" with its stack, on every
// failed connection) go to the service's logger at debug, never to stdout between the JSON lines.
import t from 'tap';
import { createDb } from '../src/db/index.ts';

t.test('a failed connection writes nothing to stdout; its notice is a debug line', async (t) => {
  const notices: Array<{ fields: object; msg: string }> = [];
  const db = createDb({
    url: 'postgres://nobody@127.0.0.1:1/none',
    poolMax: 1,
    log: { debug: (fields, msg) => notices.push({ fields, msg }) },
  });
  t.teardown(() => db.destroy());
  const printed: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  const log = console.log;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    printed.push(String(chunk));
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
  console.log = (...args: unknown[]) => printed.push(args.join(' '));
  try {
    await t.rejects(db.raw('select 1'), /ECONNREFUSED/, 'the caller gets the failure');
  } finally {
    process.stdout.write = write;
    console.log = log;
  }
  t.notMatch(printed.join(''), /Acquire connection error|ECONNREFUSED/, 'nothing of it on stdout');
  t.ok(
    notices.some((n) => n.msg === 'database client notice' && /ECONNREFUSED/.test(JSON.stringify(n.fields))),
    "knex's notice reached the logger",
  );
});
