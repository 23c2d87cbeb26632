// The package as others get it: built (scripts/build.ts), packed by `npm pack`, installed from the
// tarball into a scratch project outside the repository, imported by plain Node (no type
// stripping) and compiled by tsc under `module: nodenext`; the compiled consumer then makes a round
// trip against an embedded-mode deployment (one process): tenant, webhook destination, publish,
// the event, its attempt with the event, a retry, the deletion.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { freePort, ROOT, startReceiver, startService, testEnv, waitFor } from '@switchyard/shared/testing/index.ts';
import { buildClient } from '../scripts/build.ts';

// startService reads the mode when called: one embedded process.
process.env.SWITCHYARD_E2E_MODE = 'embedded';

const execFileAsync = promisify(execFile);
const require = createRequire(import.meta.url);
const TSC = require.resolve('typescript/bin/tsc');
const TYPES_NODE = JSON.parse(readFileSync(require.resolve('@types/node/package.json'), 'utf8')).version as string;

/** Runs a command, its output kept for the failure message; throws with it when it fails. */
function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  try {
    return execFileSync(cmd, args, {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 600_000,
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`.slice(0, 6000));
  }
}

/** Plain JavaScript: every entry point loads and exports what the README says. */
const PLAIN = `import * as client from '@switchyard/client';
import * as browser from '@switchyard/client/client';
console.log(JSON.stringify({
  index: Object.keys(client).sort(),
  browser: Object.keys(browser).sort(),
}));
`;

/** TypeScript: the round trip, typed end to end; the errors it must refuse are marked. */
const CONSUMER = `import { ApiError, createSwitchyardClient, items, ok, type Attempt, type Destination } from '@switchyard/client';

const api = createSwitchyardClient({ baseUrl: process.env.BASE_URL!, token: process.env.API_KEY! });
const step = process.argv[2];
const tenant = { params: { path: { tenant_id: 'pack-co' } } };

// Never called: what the types must refuse (an unused @ts-expect-error fails the compilation).
export function refused(): void {
  // @ts-expect-error: the tenant id is required
  void api.PUT('/api/v1/tenants/{tenant_id}', { params: { path: {} } });
  // @ts-expect-error: no such path
  void api.GET('/api/v1/nowhere');
  // @ts-expect-error: a destination needs its type
  void api.POST('/api/v1/tenants/{tenant_id}/destinations', { ...tenant, body: { topics: '*' } });
}

if (step === 'setup') {
  await ok(api.PUT('/api/v1/tenants/{tenant_id}', tenant));
  const d: Destination = await ok(
    api.POST('/api/v1/tenants/{tenant_id}/destinations', {
      ...tenant,
      body: { type: 'webhook', topics: '*', config: { url: process.env.HOOK_URL! } },
    }),
  );
  const published = await ok(api.POST('/api/v1/publish', { body: { tenant_id: 'pack-co', topic: 'user.created', data: { n: 1 } } }));
  console.log(JSON.stringify({ destination: d.id, type: d.type, event: published.id, routed: published.destination_ids }));
} else if (step === 'read') {
  const event = process.argv[3] as string;
  const got = await ok(api.GET('/api/v1/tenants/{tenant_id}/events/{event_id}', { params: { path: { tenant_id: 'pack-co', event_id: event } } }));
  const attempts: Attempt[] = [];
  for await (const a of items((next) =>
    ok(api.GET('/api/v1/tenants/{tenant_id}/attempts', { params: { path: { tenant_id: 'pack-co' }, query: { include: 'event', next } } })),
  ))
    attempts.push(a);
  console.log(JSON.stringify({ event: { id: got.id, data: got.data }, attempts: attempts.map((a) => ({ status: a.status, event: a.event?.id })) }));
} else {
  const [destination, event] = process.argv.slice(3) as [string, string];
  const retried = await ok(api.POST('/api/v1/retry', { body: { event_id: event, destination_id: destination } }));
  const deleted = await ok(
    api.DELETE('/api/v1/tenants/{tenant_id}/destinations/{destination_id}', {
      params: { path: { tenant_id: 'pack-co', destination_id: destination } },
    }),
  );
  let gone = 0;
  try {
    await ok(api.GET('/api/v1/tenants/{tenant_id}/destinations/{destination_id}', { params: { path: { tenant_id: 'pack-co', destination_id: destination } } }));
  } catch (err) {
    if (err instanceof ApiError) gone = err.status;
  }
  console.log(JSON.stringify({ retried: retried.success, deleted: deleted.success, gone }));
}
`;

t.test('the packed client: installed outside the repository, plain Node, tsc nodenext, a round trip', async (t) => {
  // The operating system's temporary directory: no node_modules of the repository above it.
  const scratch = mkdtempSync(join(tmpdir(), 'switchyard-client-'));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  t.notOk(scratch.startsWith(ROOT), `${scratch} is outside the repository`);

  const built = buildClient(join(scratch, 'package'));
  const packed = JSON.parse(run('npm', ['pack', built, '--pack-destination', scratch, '--json'], scratch)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  const tarball = join(scratch, packed[0]?.filename ?? '');
  const shipped = (packed[0]?.files ?? []).map((f) => f.path).sort();
  for (const f of ['README.md', 'package.json', 'index.js', 'index.d.ts', 'client.js', 'client.d.ts', 'generated/schema.d.ts'])
    t.ok(shipped.includes(f), `the tarball holds ${f}`);
  t.notOk(
    shipped.some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')),
    'and no TypeScript source',
  );

  const app = join(scratch, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, `@types/node@${TYPES_NODE}`], app);

  // Plain Node, with type stripping off: the package is JavaScript.
  const plain = JSON.parse(run(process.execPath, ['--no-experimental-strip-types', '--input-type=module', '-e', PLAIN], app));
  t.same(plain.index, ['ApiError', 'createSwitchyardClient', 'items', 'ok', 'pages', 'verifyWebhook', 'WebhookVerificationError'].sort());
  t.notOk(plain.browser.includes('verifyWebhook'), 'the browser entry has no verifier (node:crypto)');
  t.ok(plain.browser.includes('createSwitchyardClient'));

  // tsc under nodenext, the declaration files checked too (skipLibCheck off).
  writeFileSync(join(app, 'consumer.ts'), CONSUMER);
  const tsconfig = {
    compilerOptions: {
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      strict: true,
      skipLibCheck: false,
      types: ['node'],
      outDir: 'out',
    },
    files: ['consumer.ts'],
  };
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(tsconfig));
  run(process.execPath, [TSC, '-p', 'tsconfig.json'], app);

  // The compiled consumer against embedded mode.
  const port = await freePort();
  const env = testEnv({ API_PORT: String(port), TOPICS: 'user.created' });
  const service = await startService(t, 'gateway', env);
  const rx = await startReceiver(t);
  // Run asynchronously: the receiver answers from this process's event loop meanwhile.
  const consumer = async (...args: string[]) => {
    const { stdout } = await execFileAsync(process.execPath, ['--no-experimental-strip-types', 'out/consumer.js', ...args], {
      cwd: app,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, BASE_URL: `http://127.0.0.1:${port}`, API_KEY: env.API_KEY as string, HOOK_URL: `${rx.url}/hook` },
    });
    return JSON.parse(stdout);
  };
  const setup = await consumer('setup');
  t.equal(setup.type, 'webhook');
  t.same(setup.routed, [setup.destination], 'published to the destination');
  const read = await waitFor(
    'a successful attempt, listed',
    async () => {
      const r = await consumer('read', setup.event);
      // A first attempt may fail on a loaded machine; the automatic retry then succeeds.
      return r.attempts.some((a: { status: string }) => a.status === 'success') ? r : null;
    },
    180_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${service.output().slice(-4000)}`);
  });
  t.ok(rx.requests.length > 0, 'the webhook received the event');
  t.same(read.event, { id: setup.event, data: { n: 1 } }, 'the event, with its data');
  t.same(
    read.attempts.find((a: { status: string }) => a.status === 'success'),
    { status: 'success', event: setup.event },
    'its attempt, with the event',
  );
  const after = await consumer('finish', setup.destination, setup.event);
  t.equal(after.retried, true, 'retried');
  t.equal(after.deleted, true, 'the destination deleted');
  t.equal(after.gone, 404, 'and gone');
});
