// The fuzz run: schemathesis generates requests from the served OpenAPI document, valid
// and invalid, against an embedded-mode deployment (one process, its own log and database), and
// every answer must be no 5xx and on the document (status, content type, body schema). Bounded:
// at most MAX_EXAMPLES cases per operation, a few thousand in all, with a fixed seed so a failure
// reproduces. schemathesis is installed by infra/schemathesis.sh (PyPI, into .tools/).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { apiClient, freePort, ROOT, startReceiver, startService, testEnv, waitFor } from '@switchyard/shared/testing/index.ts';

// startService reads the mode when called: one embedded process.
process.env.SWITCHYARD_E2E_MODE = 'embedded';

const MAX_EXAMPLES = 8;
// FUZZ_SEED=n runs another seed (to look for more, by hand); CI keeps the fixed one.
const SEED = process.env.FUZZ_SEED ?? '39';

t.test('the OpenAPI document holds under fuzzing: no 5xx, nothing off the document', async (t) => {
  const install = spawnSync('bash', [`${ROOT}infra/schemathesis.sh`], { encoding: 'utf8', timeout: 600_000 });
  t.equal(install.status, 0, `schemathesis installed (${install.stderr.slice(-500)})`);
  const st = install.stdout.trim();

  const port = await freePort();
  const env = testEnv({ API_PORT: String(port), TOPICS: 'user.created,order.paid' });
  await startService(t, 'gateway', env);
  const base = `http://127.0.0.1:${port}`;
  const api = apiClient(base, env.API_KEY as string);
  // Something to find: a tenant, a destination, an event and its attempt, so reads answer 200 too.
  const rx = await startReceiver(t);
  await api('PUT', '/api/v1/tenants/acme');
  const dest = await api<{ id: string }>('POST', '/api/v1/tenants/acme/destinations', {
    type: 'webhook',
    topics: '*',
    config: { url: `${rx.url}/h` },
  });
  t.equal(dest.status, 201);
  const ev = await api<{ id: string }>('POST', '/api/v1/publish', {
    id: 'evt_1',
    tenant_id: 'acme',
    topic: 'user.created',
    data: { a: 1 },
  });
  t.equal(ev.status, 202);
  await waitFor(
    'the seed attempt',
    async () => (await api<{ models: unknown[] }>('GET', '/api/v1/attempts?tenant_id=acme')).body.models.length > 0,
  );

  const args = [
    'run',
    `${base}/api/v1/openapi.json`,
    '--header',
    `Authorization: Bearer ${env.API_KEY}`,
    '--checks',
    'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
    '--phases',
    'coverage,fuzzing',
    '--max-examples',
    String(MAX_EXAMPLES),
    '--seed',
    SEED,
    // One worker: with two threads, CPython 3.11's ast.parse (which hypothesis calls to describe
    // filters) fails now and then with "AST constructor recursion depth mismatch".
    '--workers',
    '1',
    '--request-timeout',
    '20',
    '--max-failures',
    '50',
    '--no-color',
    '--suppress-health-check',
    'all',
    '--generation-database',
    'none',
    '--warnings',
    'off',
  ];
  // schemathesis keeps a cache in its working directory: a scratch one, not the repository.
  const scratch = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'fuzz-'));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  const run = spawn(st, args, { cwd: scratch });
  let out = '';
  run.stdout.on('data', (d: Buffer) => (out += d.toString()));
  run.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const killer = setTimeout(() => run.kill('SIGKILL'), 290_000);
  const status = await new Promise<number | null>((r) => run.once('exit', r));
  clearTimeout(killer);

  const cases = /(\d+) generated, (\d+) passed(?:, (\d+) failed)?/.exec(out);
  t.ok(cases, 'schemathesis reported its test cases');
  const generated = Number(cases?.[1] ?? 0);
  t.ok(generated >= 1000, `${generated} cases generated`);
  t.equal(Number(cases?.[3] ?? 0), 0, 'no case failed');
  t.equal(status, 0, `schemathesis exit status${status === 0 ? '' : `\n${out.slice(-12_000)}`}`);
});
