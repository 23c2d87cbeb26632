// Runs the independent Python client of the documented contract against a gateway process.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { createTestDatabase, freePort, ROOT, startService, testEnv } from '@switchyard/shared/testing/index.ts';

t.test('an independent client of the documented contract passes', async (t) => {
  const port = await freePort();
  const env = testEnv({ DATABASE_URL: await createTestDatabase(t), API_PORT: String(port), TOPICS: 'user.created,user.deleted' });
  await startService(t, 'gateway', env);
  const run = spawnSync('python3', [`${ROOT}test/contract/client.py`, `http://127.0.0.1:${port}`, env.API_KEY as string], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const lines = run.stdout.trim().split('\n');
  for (const line of lines.filter((l) => /^(ok|FAIL) /.test(l))) t.ok(line.startsWith('ok '), line.replace(/^(ok|FAIL) /, ''));
  t.equal(run.status, 0, `client exit status (stderr: ${run.stderr.slice(0, 500)})`);
  t.match(lines.at(-1), /^\d+ checks passed$/);
});
