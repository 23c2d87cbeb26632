// A migrated embedded database for tests to start from a copy of. initdb and the migrations take
// 6-8 s of CPU an embedded database (30-50 s on a loaded CI host); a copy and an open, under 2 s.
// Tests that are about a first start (test/embedded/embedded.test.ts, signals.test.ts, the
// migration suites) open empty directories of their own and still run both.
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedDb } from '../db/embedded.ts';
import { migrateLatest } from '../db/index.ts';
import { processAlive } from '../process.ts';

let template: Promise<string> | undefined;

/**
 * `root/name`, made by `build` once among the processes that ask at the same time: one of them
 * builds (it holds `name.lock`, its pid inside), the others wait while that process lives and build
 * for themselves if it dies or fails first. A build fills a directory aside that is renamed into
 * place, so a `name` that exists is whole. Resolves to the directory and whether this process built.
 */
export async function buildOnce(
  root: string,
  name: string,
  build: (dir: string) => Promise<void>,
): Promise<{ dir: string; built: boolean }> {
  const final = join(root, name);
  const lock = join(root, `${name}.lock`);
  for (;;) {
    if (existsSync(final)) return { dir: final, built: false };
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // 0: the holder has made the file and not yet written its pid.
    const holder = Number(readFileSync(lock, 'utf8'));
    if (holder && !processAlive(holder)) break; // it died: build here
    await new Promise((r) => setTimeout(r, 200));
  }
  const aside = mkdtempSync(join(root, `${name}-build-`));
  try {
    await build(aside);
  } catch (err) {
    // The others try for themselves rather than wait for this process to end.
    rmSync(lock, { force: true });
    rmSync(aside, { recursive: true, force: true });
    throw err;
  }
  try {
    renameSync(aside, final);
  } catch (err) {
    // This process took over from a builder that died, and the builder's rename came first.
    if (!existsSync(final)) throw err;
    rmSync(aside, { recursive: true, force: true });
  }
  return { dir: final, built: true };
}

/**
 * The template: built once per test run where the run names a directory (SWITCHYARD_TEST_RUN,
 * infra/test.sh), shared by the files running at once; otherwise once per process.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    let root = process.env.SWITCHYARD_TEST_RUN;
    if (!root) {
      const own = mkdtempSync(join(tmpdir(), 'pglite-template-'));
      process.once('exit', () => rmSync(own, { recursive: true, force: true }));
      root = own;
    }
    const { dir } = await buildOnce(root, 'pglite-template', async (aside) => {
      const db = await openEmbeddedDb(aside);
      try {
        await migrateLatest(db.db);
      } finally {
        await db.close();
      }
    });
    return dir;
  })();
  return template;
}

/** Fills `dir` (absent or empty) with a copy of a database migrated to this tree's latest migration. */
export async function copyMigratedEmbeddedDb(dir: string): Promise<void> {
  cpSync(await migratedTemplate(), dir, { recursive: true });
}
