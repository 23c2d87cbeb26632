// A migrated embedded database for tests to start from a copy of. initdb and the migrations take
// 6-8 s of CPU an embedded database (30-50 s on a loaded CI host); a copy and an open, under 2 s.
// Tests that are about a first start (test/embedded/embedded.test.ts, signals.test.ts, the
// migration suites) open empty directories of their own and still run both.
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedDb } from '../db/embedded.ts';
import { migrateLatest } from '../db/index.ts';

let template: Promise<{ dir: string; built: boolean }> | undefined;

/** Whether the process `pid` still runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The template's directory: built once per test run where the run names a directory
 * (SWITCHYARD_TEST_RUN, infra/test.sh), shared by the files running at once, otherwise once per
 * process. One process builds it (it holds `pglite-template.lock`, its pid inside); the others wait
 * for it while that process lives, and build one of their own if it dies first. A build migrates
 * a directory aside and renames it into place, so a template that exists is whole.
 */
function migratedTemplate(): Promise<{ dir: string; built: boolean }> {
  template ??= (async () => {
    let root = process.env.SWITCHYARD_TEST_RUN;
    if (!root) {
      const own = mkdtempSync(join(tmpdir(), 'pglite-template-'));
      process.once('exit', () => rmSync(own, { recursive: true, force: true }));
      root = own;
    }
    const final = join(root, 'pglite-template');
    const lock = join(root, 'pglite-template.lock');
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
      if (holder && !alive(holder)) break; // it died: build one here
      await new Promise((r) => setTimeout(r, 200));
    }
    const aside = mkdtempSync(join(root, 'pglite-template-build-'));
    try {
      const db = await openEmbeddedDb(aside);
      try {
        await migrateLatest(db.db);
      } finally {
        await db.close();
      }
    } catch (err) {
      // The others try for themselves rather than wait for this process to end.
      rmSync(lock, { force: true });
      rmSync(aside, { recursive: true, force: true });
      throw err;
    }
    try {
      renameSync(aside, final);
    } catch (err) {
      // A process that took over from a builder that died, and the builder's rename came first.
      if (!existsSync(final)) throw err;
      rmSync(aside, { recursive: true, force: true });
    }
    return { dir: final, built: true };
  })();
  return template;
}

/**
 * Fills `dir` (absent or empty) with a copy of a database migrated to this tree's latest migration.
 * Resolves to whether this process built a template, initdb and migrations (for its test).
 */
export async function copyMigratedEmbeddedDb(dir: string): Promise<boolean> {
  const { dir: from, built } = await migratedTemplate();
  cpSync(from, dir, { recursive: true });
  return built;
}
