// releaseStartupMemory: free pages left between live blocks of glibc's heap go back to the kernel,
// which a garbage collection alone does not do. Run in a child with --expose-gc, as npm start runs.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { onGlibc, ROOT } from '@switchyard/shared/testing/index.ts';

// 64 KiB blocks come from malloc's heap (under its mmap threshold); keeping every other one of
// 1,600 leaves 800 holes (50 MB) that the heap cannot shrink past. The second mode only collects.
const SCRIPT = `
import { releaseStartupMemory } from '${ROOT}services/embedded/src/memory.ts';
let blocks = Array.from({ length: 1600 }, () => new Uint8Array(64 * 1024).fill(1));
const kept = blocks.filter((_, i) => i % 2 === 0);
blocks = null;
gc();
await new Promise((r) => setTimeout(r, 200));
gc();
const before = process.memoryUsage.rss();
let trimmed = false;
if (process.argv[1] === 'release') trimmed = (await releaseStartupMemory()).trimmed;
else gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
const freedMb = (before - process.memoryUsage.rss()) / 2 ** 20;
console.log(JSON.stringify({ freedMb, trimmed, kept: kept.length }));
`;

function run(mode: 'release' | 'collect'): { freedMb: number; trimmed: boolean; kept: number } {
  const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', SCRIPT, mode], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}

t.test('the holes between live blocks go back to the kernel, which a collection does not do', async (t) => {
  const released = run('release');
  t.equal(released.kept, 800);
  if (!onGlibc()) {
    // musl and others have no malloc_trim: the call only collects, and says so.
    t.equal(released.trimmed, false, 'not trimmed where there is no glibc');
    return;
  }
  const collected = run('collect');
  t.equal(released.trimmed, true, 'malloc_trim was called');
  t.ok(released.freedMb >= 25, `released ${released.freedMb.toFixed(1)} MB (the holes: 50 MB)`);
  t.ok(collected.freedMb < 15, `a collection alone released ${collected.freedMb.toFixed(1)} MB`);
});
