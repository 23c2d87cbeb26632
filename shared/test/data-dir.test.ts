// The data directory embedded mode makes (shared/src/data-dir.ts): its owner's alone, since it holds
// every event and the database (PGlite makes its files readable and writable by anyone); parents it
// makes keep the usual mode, and a directory that exists keeps its own.
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ensureDataDir } from '../src/data-dir.ts';

t.test('a data directory made here is 0700; its parents and an existing one are left as they are', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'sy-data-dir-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = join(root, 'parent', 'data');
  ensureDataDir(dir);
  t.equal(statSync(dir).mode & 0o777, 0o700, 'the data directory: owner only');
  t.not(statSync(join(root, 'parent')).mode & 0o777, 0o700, 'a parent made on the way: the usual mode');
  const existing = join(root, 'existing');
  mkdirSync(existing, { mode: 0o750 });
  ensureDataDir(existing);
  t.equal(statSync(existing).mode & 0o777, 0o750, 'an existing directory keeps its mode');
});
