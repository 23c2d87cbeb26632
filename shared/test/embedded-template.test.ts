import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { openEmbeddedDb } from '../src/db/embedded.ts';
import { migrateLatest } from '../src/db/index.ts';
import { buildOnce, copyMigratedEmbeddedDb } from '../src/testing/embedded-template.ts';

const run = promisify(execFile);
const MODULE = new URL('../src/testing/embedded-template.ts', import.meta.url).pathname;

/**
 * A process that asks for `root/thing` with a build that takes a while and writes its pid, and
 * prints whether it built.
 */
function ask(root: string) {
  const script = `const { buildOnce } = await import(${JSON.stringify(MODULE)});
    const { writeFileSync } = await import('node:fs');
    const { built } = await buildOnce(process.argv[1], 'thing', async (dir) => {
      await new Promise((r) => setTimeout(r, 1000));
      writeFileSync(dir + '/by', String(process.pid));
    });
    console.log(JSON.stringify({ built }));`;
  return run(process.execPath, ['--input-type=module', '-e', script, root]).then(({ stdout }) => JSON.parse(stdout) as { built: boolean });
}

function freshRoot(t: { teardown(fn: () => void): void }): string {
  const root = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'build-once-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

t.test('processes that ask at once share one build, and a later one finds it', async (t) => {
  const root = freshRoot(t);
  const [a, b, c] = await Promise.all([ask(root), ask(root), ask(root)]);
  t.equal([a, b, c].filter((r) => r.built).length, 1, 'one of three built; the other two waited for it');
  t.ok(readFileSync(join(root, 'thing', 'by'), 'utf8'), 'the build is in place whole');
  t.same(
    readdirSync(root).filter((f) => f.startsWith('thing-build-')),
    [],
    'nothing left aside',
  );
  t.same(await ask(root), { built: false }, 'a later process uses it');
});

t.test('a builder that died does not hold the others; one that fails lets them try', async (t) => {
  const dead = freshRoot(t);
  // The lock of a process that has exited (a child, waited for), and nothing built.
  const { stdout } = await run(process.execPath, ['-e', 'console.log(process.pid)']);
  writeFileSync(join(dead, 'thing.lock'), stdout.trim());
  t.same(await ask(dead), { built: true }, 'the next process builds for itself');
  t.ok(existsSync(join(dead, 'thing', 'by')));

  const failing = freshRoot(t);
  await t.rejects(
    buildOnce(failing, 'thing', async () => {
      throw new Error('no room');
    }),
    /no room/,
  );
  t.notOk(existsSync(join(failing, 'thing.lock')), 'its lock is given up');
  t.same(await ask(failing), { built: true }, 'so the next process builds at once');
});

t.test("the template's copies are at the latest migration and each its own", async (t) => {
  const root = freshRoot(t);
  await copyMigratedEmbeddedDb(join(root, 'a'));
  await copyMigratedEmbeddedDb(join(root, 'b'));
  const first = await openEmbeddedDb(join(root, 'a'));
  const second = await openEmbeddedDb(join(root, 'b'));
  t.teardown(async () => {
    await first.close();
    await second.close();
  });
  t.same(await migrateLatest(first.db), [], 'nothing left to migrate');
  await first.db('tenants').insert({ id: 'only-in-a' });
  t.same(await second.db('tenants').where({ id: 'only-in-a' }), [], 'a write to one copy is not in another');
});
