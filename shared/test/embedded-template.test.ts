import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { openEmbeddedDb } from '../src/db/embedded.ts';
import { migrateLatest } from '../src/db/index.ts';

const run = promisify(execFile);
const MODULE = new URL('../src/testing/embedded-template.ts', import.meta.url).pathname;

/** A process that copies the template into `dir` under `root` and prints whether it built it. */
function copyIn(root: string, dir: string) {
  const script = `const { copyMigratedEmbeddedDb } = await import(${JSON.stringify(MODULE)});
    console.log(JSON.stringify({ built: await copyMigratedEmbeddedDb(process.argv[1]) }));`;
  return run(process.execPath, ['--input-type=module', '-e', script, dir], { env: { ...process.env, SWITCHYARD_TEST_RUN: root } }).then(
    ({ stdout }) => JSON.parse(stdout) as { built: boolean },
  );
}

function freshRoot(t: { teardown(fn: () => void): void }): string {
  const root = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'template-test-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

t.test('files started at once share one build; each copy is migrated and its own', async (t) => {
  const root = freshRoot(t);
  const [a, b] = await Promise.all([copyIn(root, join(root, 'a')), copyIn(root, join(root, 'b'))]);
  t.equal(Number(a.built) + Number(b.built), 1, 'one of the two processes built the template, the other waited for it');
  t.same(
    readdirSync(root).filter((f) => f.startsWith('pglite-template-build-')),
    [],
    'no build left aside',
  );
  const late = await copyIn(root, join(root, 'c'));
  t.equal(late.built, false, 'a later process copies the template it finds');

  const first = await openEmbeddedDb(join(root, 'a'));
  const second = await openEmbeddedDb(join(root, 'b'));
  t.teardown(async () => {
    await first.close();
    await second.close();
  });
  t.same(await migrateLatest(first.db), [], 'a copy is at the latest migration');
  await first.db('tenants').insert({ id: 'only-in-a' });
  t.same(await second.db('tenants').where({ id: 'only-in-a' }), [], 'a write to one copy is not in another');
});

t.test('a builder that died does not hold the others', async (t) => {
  const root = freshRoot(t);
  // The lock of a process that has exited (this one's child, waited for), and no template.
  const { stdout } = await run(process.execPath, ['-e', 'console.log(process.pid)']);
  writeFileSync(join(root, 'pglite-template.lock'), stdout.trim());
  const got = await copyIn(root, join(root, 'a'));
  t.equal(got.built, true, 'the next process builds the template itself');
  t.ok(existsSync(join(root, 'pglite-template')), 'and leaves it for the rest');
});
