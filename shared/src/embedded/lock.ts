// The embedded log's directory lock (one process per data directory) and durable file writes.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '../process.ts';

// ---------------------------------------------------------------------------------------------
// Directory lock: one process per data directory.

const held = new Set<string>();

/**
 * Takes `<dir>/.lock` for this process (its pid inside). A lock left by a dead process (after
 * SIGKILL or a power cut) is taken over; one held by a live process is an error.
 */
export function lockDirectory(dir: string): { release(): void } {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, '.lock');
  if (held.has(file)) throw new Error(`${dir} is already open in this process`);
  for (let i = 0; i < 2; i++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      held.add(file);
      return {
        release() {
          if (!held.delete(file)) return;
          try {
            unlinkSync(file);
          } catch {
            // already gone
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = Number(readFileSync(file, 'utf8').trim());
    // Our own pid in a lock we do not hold is stale too (a restarted container reuses pids).
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) {
      throw new Error(`${dir} is in use by process ${pid} (embedded mode runs in one process); stop it, or remove ${file} if it is gone`);
    }
    unlinkSync(file);
  }
  throw new Error(`could not lock ${dir}`);
}

/** Makes a directory entry (a created or renamed file) durable. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export function writeFileDurably(path: string, data: string | Buffer): Promise<void> {
  const tmp = `${path}.${randomUUID()}.tmp`;
  return (async () => {
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    renameSync(tmp, path);
    await syncDir(join(path, '..'));
  })();
}
