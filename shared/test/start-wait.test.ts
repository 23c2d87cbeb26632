// The tests' start-up wait (shared/src/testing/progress.ts) on real child processes: it waits as long
// as a process moves (writes, or uses CPU without writing), and fails one that exits, one that stops
// moving, and one that never gets ready within the cap.
import { spawn } from 'node:child_process';
import t from 'tap';
import { cpuTicks, waitForStart } from '../src/testing/index.ts';

function child(t: { teardown(fn: () => unknown): void }, code: string) {
  const c = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  c.stdout.on('data', (d: Buffer) => (out += d.toString()));
  c.stderr.on('data', (d: Buffer) => (out += d.toString()));
  t.teardown(() => {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
  return { c, out: () => out };
}

t.test('a slow start that keeps writing is waited for past the stall bound', async (t) => {
  // Ready after about three stall bounds, writing all along.
  const p = child(
    t,
    'let n = 0; const i = setInterval(() => { console.log("step", ++n); if (n === 30) { console.log("ready"); clearInterval(i); setTimeout(() => {}, 60000); } }, 100);',
  );
  await waitForStart('slow writer', p.c, p.out, () => /ready/.test(p.out()), { stallMs: 1000, pollMs: 20 });
  t.match(p.out(), /step 30\nready/);
});

t.test('a process that uses CPU without writing is moving', async (t) => {
  const p = child(t, 'for (;;) {}');
  await t.rejects(
    waitForStart('busy', p.c, p.out, () => false, { stallMs: 1500, capMs: 6000 }),
    /busy: not ready within 6 s, though still working/,
    'stopped by the cap, not as stuck',
  );
  t.ok((cpuTicks(p.c.pid as number) ?? 0) > 0, 'its CPU time is read');
});

t.test('a process that neither writes nor uses CPU is stuck', async (t) => {
  const p = child(t, 'console.log("started"); setTimeout(() => {}, 600000);');
  await t.rejects(
    waitForStart('silent', p.c, p.out, () => false, { stallMs: 1500 }),
    /silent: not ready, and no output or CPU use for 2 s:\nstarted/,
  );
});

t.test('a process that exits before it is ready fails at once, with its output', async (t) => {
  const p = child(t, 'console.error("bad setting"); process.exit(2);');
  await t.rejects(
    waitForStart('quitter', p.c, p.out, () => false),
    /quitter: exited \(2\) before it was ready:\nbad setting/,
  );
});
