// A signal during start-up (shared/src/process.ts): the stop runs once start-up is done, with its
// own grace; the start-up grace armed by the signal no longer ends the process in the middle of it.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const script = `
  const { catchSignals, onShutdown } = await import(${JSON.stringify(fileURLToPath(new URL('../src/process.ts', import.meta.url)))});
  const { createLogger } = await import(${JSON.stringify(fileURLToPath(new URL('../src/log.ts', import.meta.url)))});
  catchSignals(300);
  // Start-up ends just after the signal is seen (a listener added later runs later; setImmediate
  // runs before any timer, however loaded the host). The stop it then runs takes 600 ms, past the
  // start-up grace.
  process.once('SIGTERM', () =>
    setImmediate(() => onShutdown(createLogger('t', 'info'), () => new Promise((r) => setTimeout(r, 600)))),
  );
  // Start-up's own work keeps the process alive until the signal comes (onShutdown ends it).
  setInterval(() => {}, 1_000);
  process.kill(process.pid, 'SIGTERM');
`;

t.test('a stop begun after a signal during start-up runs to its end', async (t) => {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  // Before a logger is registered the line goes to stderr; the service's logger writes to stdout.
  t.match(r.stderr, /signal during start-up; stopping once started/);
  const logged = r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { msg: string }).msg);
  t.same(logged, ['shutting down', 'stopped'], 'no exit in the middle of the stop');
  t.notMatch(r.stderr, /start-up did not finish/);
  t.equal(r.status, 0);
});
