// A signal during start-up (shared/src/process.ts): the stop runs once start-up is done, with its
// own grace; the start-up grace armed by the signal no longer ends the process in the middle of it.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const script = `
  const { catchSignals, onShutdown } = await import(${JSON.stringify(fileURLToPath(new URL('../src/process.ts', import.meta.url)))});
  const { createLogger } = await import(${JSON.stringify(fileURLToPath(new URL('../src/log.ts', import.meta.url)))});
  catchSignals(300);
  process.kill(process.pid, 'SIGTERM');
  // Start-up ends 100 ms later; the stop it then runs takes 600 ms, past the start-up grace.
  await new Promise((r) => setTimeout(r, 100));
  onShutdown(createLogger('t', 'info'), () => new Promise((r) => setTimeout(r, 600)));
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
