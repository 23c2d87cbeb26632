// npm run start:stack against the test command's broker and a database of its own: every service
// starts, and METRICS_PORT=0 gives each its own free ops port (router and sender do not take the
// ports after 0, which are 1 and 2). Ctrl-C (SIGINT) stops them all.
import { spawn } from 'node:child_process';
import t from 'tap';
import { createTestDatabase, ROOT, testEnv, waitFor } from '@switchyard/shared/testing/index.ts';

t.test('start:stack with METRICS_PORT=0 and API_PORT=0: free ports for every listener', async (t) => {
  const env = testEnv({ DATABASE_URL: await createTestDatabase(t), METRICS_PORT: '0', API_PORT: '0', LOG_LEVEL: 'info' });
  // All three secrets supplied: nothing is written under .tools.
  const child = spawn(process.execPath, [`${ROOT}infra/dev/start.ts`], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  const opsPorts = () =>
    Object.fromEntries(
      [...out.matchAll(/^(attempts|router|sender) +\| .*"metrics_port":(\d+)/gm)].map((m) => [m[1] as string, Number(m[2])] as const),
    );
  const ports = await waitFor('three ops listeners', () => Object.keys(opsPorts()).length === 3 && opsPorts(), 120_000);
  for (const [service, port] of Object.entries(ports)) t.ok(port >= 1024, `${service}: a free port (${port}), not METRICS_PORT + n`);
  t.equal(new Set(Object.values(ports)).size, 3, 'each its own');
  await waitFor('the gateway listening', () => /^gateway +\| .*Server listening/m.test(out), 120_000);
  t.match(out, /Switchyard is starting on 127\.0\.0\.1, on the port the gateway logs/, 'the banner does not print port 0');

  child.kill('SIGINT');
  t.equal(await exited, 0, 'Ctrl-C stops every service, exit code 0');
  t.notMatch(out, /exited \(1\)|"level":"(error|fatal)"/, 'no service failed');
});
