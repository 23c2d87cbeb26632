// The data directory of embedded mode (DATA_DIR): made before anything is written in it, so a path
// that cannot be one is refused with one clear line at start, as a bad setting is.
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from './config/index.ts';

/**
 * Creates `dir` (and its missing parents) one level at a time, checking each: an ancestor that is a
 * file, a level that cannot be made, or a directory that cannot be written is a ConfigError naming
 * DATA_DIR. One level at a time because Node's recursive mkdir never returns on some paths (under
 * /proc it spins for ever at full CPU, deaf to signals); a plain mkdir answers at once. The data
 * directory itself, when made here, is its owner's alone (0700): it holds every event and the
 * database, whose files PGlite makes readable and writable by anyone.
 */
export function ensureDataDir(dir: string): void {
  const target = resolve(dir);
  const levels: string[] = [];
  for (let p = target; ; p = dirname(p)) {
    levels.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const level of levels) {
    let isDir: boolean;
    try {
      isDir = statSync(level).isDirectory();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw refused(`cannot read ${level}`, err);
      try {
        mkdirSync(level, level === target ? { mode: 0o700 } : undefined);
        continue;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST' && statSync(level).isDirectory()) continue; // made meanwhile
        throw refused(`cannot create ${level}`, e);
      }
    }
    if (!isDir) throw new ConfigError([`DATA_DIR: ${level} is not a directory, so ${target} cannot be one`]);
  }
  // A file made and removed, not access(2): root passes that on directories it still cannot write
  // (/sys/kernel), and the start would then fail on its first file with no DATA_DIR named.
  // A few KiB, so a full file system is found here too, named as such.
  const probe = join(target, `.write-check-${process.pid}`);
  try {
    writeFileSync(probe, Buffer.alloc(4096));
    rmSync(probe);
  } catch (err) {
    rmSync(probe, { force: true });
    const full = ['ENOSPC', 'EDQUOT'].includes((err as NodeJS.ErrnoException).code ?? '');
    throw refused(full ? `${target} is full: free space on its file system` : `${target} is not writable`, err);
  }
}

function refused(what: string, err: unknown): ConfigError {
  const e = err as NodeJS.ErrnoException;
  // A system error's message repeats the call and path: its code and description suffice.
  const why = e.code ? `${e.code}: ${e.message.split(',')[0]?.replace(`${e.code}: `, '')}` : String(e.message ?? e);
  return new ConfigError([`DATA_DIR: ${what} (${why})`]);
}
