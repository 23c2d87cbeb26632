// A Python client generated from the served document by openapi-generator (the pinned jar from
// Maven Central), installed into a virtual environment and taken through a round trip against
// embedded mode: tenant, webhook destination, publish, the events, the attempts with their event,
// a retry, the deletion (test/clients/roundtrip.py). Any generator or install failure fails here.
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '@switchyard/shared/testing/index.ts';
import { checkRoundTrip, deployment, generate, run } from './generated.ts';

// startService reads the mode when called: one embedded process.
process.env.SWITCHYARD_E2E_MODE = 'embedded';

t.test('a Python client from openapi-generator: generated, installed, a round trip', async (t) => {
  const d = await deployment(t, 'python-client');
  const out = join(d.scratch, 'python');
  generate(d, 'python', out, { packageName: 'switchyard_client', projectName: 'switchyard-client' });
  const venv = join(d.scratch, 'venv');
  run('python3', ['-m', 'venv', venv], d.scratch);
  run(join(venv, 'bin/pip'), ['install', '--quiet', '--disable-pip-version-check', out], d.scratch);

  await checkRoundTrip(t, d, 'py-co', join(venv, 'bin/python'), join(ROOT, 'test/clients/roundtrip.py'), d.scratch);
});
