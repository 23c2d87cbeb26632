// A Python client generated from the served document by openapi-generator (the pinned jar from
// Maven Central), installed into a virtual environment and taken through a round trip against
// embedded mode: tenant, webhook destination, publish, the events, the attempts with their event,
// a retry, the deletion (test/clients/roundtrip.py). Any generator or install failure fails here.
import { join } from 'node:path';
import t from 'tap';
import { ROOT, waitFor } from '@switchyard/shared/testing/index.ts';
import { deployment, execFileAsync, generate, run } from './generated.ts';

// startService reads the mode when called: one embedded process.
process.env.SWITCHYARD_E2E_MODE = 'embedded';

t.test('a Python client from openapi-generator: generated, installed, a round trip', async (t) => {
  const d = await deployment(t, 'python-client');
  const out = join(d.scratch, 'python');
  generate(d, 'python', out, { packageName: 'switchyard_client', projectName: 'switchyard-client' });
  const venv = join(d.scratch, 'venv');
  run('python3', ['-m', 'venv', venv], d.scratch);
  run(join(venv, 'bin/pip'), ['install', '--quiet', '--disable-pip-version-check', out], d.scratch);

  // Asynchronously: the receiver answers from this process meanwhile.
  const roundTrip = async (...args: string[]) => {
    const { stdout } = await execFileAsync(join(venv, 'bin/python'), [join(ROOT, 'test/clients/roundtrip.py'), ...args], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, BASE_URL: d.baseUrl, API_KEY: d.apiKey, HOOK_URL: `${d.receiver.url}/hook` },
    });
    return JSON.parse(stdout);
  };
  const setup = await roundTrip('setup');
  t.equal(setup.tenant, 'py-co', 'tenant');
  t.equal(setup.type, 'webhook', 'webhook destination');
  t.same(setup.routed, [setup.destination], 'published, routed to it');
  const read = await waitFor(
    'a successful attempt, listed',
    async () => {
      const r = await roundTrip('read', setup.event);
      return r.attempts.some((a: { status: string }) => a.status === 'success') ? r : null;
    },
    180_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${d.service.output().slice(-4000)}`);
  });
  t.same(read.events, [setup.event], 'the events');
  t.same(read.event, { id: setup.event, data: { n: 1 } }, 'the event, with its data');
  t.same(
    read.attempts.find((a: { status: string }) => a.status === 'success'),
    { status: 'success', event: setup.event },
    'its attempt, with the event',
  );
  t.ok(d.receiver.requests.length > 0, 'the webhook received it');
  const finish = await roundTrip('finish', setup.destination, setup.event);
  t.same(finish, { retried: true, deleted: true, gone: 404 }, 'retried; the destination deleted, and gone');
});
