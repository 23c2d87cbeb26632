// `node services/embedded/src/main.ts` as a user runs it (npm start): nothing configured, a fresh data
// directory. The printed example works when pasted into a shell, and an event whose publish answered
// 202 is delivered after the process is killed with SIGKILL and started again.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startFlags } from '../../bench/lib/stack.ts';
import { apiClient, freePort, onGlibc, ROOT, startReceiver, waitFor, waitForStart } from '@switchyard/shared/testing/index.ts';

interface Proc {
  child: ChildProcess;
  output(): string;
}

/** The embedded process with the caller's environment minus every Switchyard setting but these. */
async function startEmbedded(
  t: { teardown(fn: () => unknown): void },
  env: Record<string, string>,
  nodeFlags: string[] = [],
): Promise<Proc> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(API_|KAFKA_|DATABASE_|AES_|EGRESS_|DATA_DIR|SWITCHYARD_E2E)/.test(k)),
  );
  const child = spawn(process.execPath, [...nodeFlags, `${ROOT}services/embedded/src/main.ts`], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await waitForStart(
    'the embedded process',
    child,
    () => out,
    () => /embedded mode ready/.test(out),
  );
  return { child, output: () => out };
}

t.test('embedded mode: the printed example works; SIGKILL after a 202 loses nothing', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sy-embedded-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const env = { DATA_DIR: dataDir, API_PORT: String(port), LOG_LEVEL: 'info' };
  const first = await startEmbedded(t, env);
  const out = first.output();

  // The banner: URL, where the key comes from (generated, stored, shown once), data directory.
  const url = `http://127.0.0.1:${port}`;
  t.match(out, `URL        ${url}`, 'prints the URL');
  const secrets = join(dataDir, 'secrets.env');
  t.match(out, `generated now and stored in ${secrets}; shown this once`, 'says where the API key comes from');
  const key = readFileSync(secrets, 'utf8').match(/^API_KEY=(.+)$/m)?.[1] ?? '';
  t.ok(key.length >= 20, 'a key was generated into the data directory');
  t.equal(statSync(secrets).mode & 0o777, 0o600, 'the secrets file is private');
  // PGlite sets its files' modes itself (0666): what keeps them private is the directories holding them.
  const openToOthers = (f: string) => {
    const s = statSync(join(dataDir, f), { throwIfNoEntry: false });
    return s && (s.isDirectory() || !f.includes('/')) && s.mode & 0o077;
  };
  const shared = readdirSync(dataDir, { recursive: true, encoding: 'utf8' }).filter(openToOthers);
  t.same(shared, [], 'no directory in the data directory, nor any of its own files, is open to others (the log, PGlite)');
  t.match(out, `Data       ${dataDir}`, 'prints the data directory');
  t.match(out, 'EGRESS_ALLOW=127.0.0.0/8,::1/128', 'loopback delivery is allowed');

  // The example, run as printed; only the receiver's address is this test's.
  const rx = await startReceiver(t);
  const example = out.slice(out.indexOf(`KEY=${key}`), out.indexOf('/attempts', out.indexOf(`KEY=${key}`)) + '/attempts'.length);
  t.match(
    example,
    /curl[^\n]*tenants\/acme\n.*destinations.*\n.*publish.*\n.*attempts$/s,
    'the example: tenant, destination, publish, attempts',
  );
  const run = spawnSync('bash', ['-euo', 'pipefail', '-c', example.replaceAll('http://127.0.0.1:8080', rx.url)], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.equal(run.status, 0, `the example runs (stderr: ${run.stderr})`);
  const [tenant, destination, published] = run.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.match(tenant, { id: 'acme' }, 'tenant created');
  t.match(destination, { type: 'webhook', config: { url: `${rx.url}/hook` } }, 'webhook destination created');
  t.match(published, { duplicate: false, destination_ids: [destination?.id] }, 'event published');
  const hook = await waitFor('the webhook delivery', () => rx.requests[0]);
  t.equal(hook.url, '/hook');
  t.same(JSON.parse(hook.body), { id: 'u_1' }, 'the event reached the receiver');
  const api = apiClient(url, key);
  const attempts = await waitFor('the attempt stored', async () => {
    const r = await api<{ models: Array<Record<string, unknown>> }>('GET', '/api/v1/tenants/acme/attempts');
    return r.body.models.length ? r.body.models : undefined;
  });
  t.match(attempts[0], { status: 'success', code: '200', event_id: published?.id });

  // Run again as printed: the tenant and the destination stay one each (the destination's fixed id
  // makes its second create a 409), and the event is published once more.
  const again = spawnSync('bash', ['-euo', 'pipefail', '-c', example.replaceAll('http://127.0.0.1:8080', rx.url)], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.equal(again.status, 0, `the example runs again (stderr: ${again.stderr})`);
  const [, secondCreate] = again.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.match(secondCreate, { code: 'DESTINATION_EXISTS' }, 'the second create is refused');
  const listed = await api<Array<{ id: string }>>('GET', '/api/v1/tenants/acme/destinations');
  t.same(
    listed.body.map((d) => d.id),
    [destination?.id],
    'still one destination',
  );

  // SIGKILL right after the 202s: every accepted event is delivered after a restart.
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await api<{ id: string }>('POST', '/api/v1/publish', { tenant_id: 'acme', topic: 'user.created', data: { n: i } });
    t.equal(r.status, 202);
    ids.push(r.body.id);
  }
  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));
  const deliveredBefore = ids.filter((id) => rx.requests.some((r) => r.headers['x-outpost-event-id'] === id)).length;

  const second = await startEmbedded(t, env);
  t.notMatch(second.output(), key, 'the key is not shown again');
  t.match(second.output(), `API key    API_KEY in ${secrets}`, 'says where the key is');
  await waitFor(
    'every accepted event delivered',
    () => ids.every((id) => rx.requests.some((r) => r.headers['x-outpost-event-id'] === id)),
    60_000,
  );
  t.pass(`all ${ids.length} accepted events delivered (${deliveredBefore} of them before the kill)`);
  const lastAttempts = await waitFor('the attempts stored', async () => {
    const r = await api<{ models: Array<{ event_id: string; status: string }> }>('GET', '/api/v1/tenants/acme/attempts');
    return ids.every((id) => r.body.models.some((a) => a.event_id === id && a.status === 'success')) ? r.body.models : undefined;
  });
  t.ok(lastAttempts.length >= ids.length + 1, 'their attempts are listed');

  // A graceful stop (SIGTERM) exits 0; a second process on the same data directory is refused.
  const third = spawnSync(process.execPath, [`${ROOT}services/embedded/src/main.ts`], {
    cwd: ROOT,
    env: { ...process.env, KAFKA_BROKERS: '', DATABASE_URL: '', ...env, API_PORT: String(await freePort()) },
    encoding: 'utf8',
    timeout: 60_000,
  });
  t.not(third.status, 0, 'a second process on the same data directory does not start');
  t.match(third.stdout + third.stderr, /in use by process \d+/);
  second.child.kill('SIGTERM');
  const code = await new Promise((r) => second.child.once('exit', (c) => r(c)));
  t.equal(code, 0, 'SIGTERM stops it cleanly');
});

t.test("with npm start's flags, the young generation start-up grew and glibc's free pages are given back", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sy-embedded-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const flags = startFlags(readFileSync(join(ROOT, 'infra/start.sh'), 'utf8'));
  const p = await startEmbedded(t, { DATA_DIR: dataDir, API_PORT: String(port), LOG_LEVEL: 'debug' }, flags);
  const line = await waitFor('the release after start-up', () =>
    p
      .output()
      .split('\n')
      .find((l) => l.includes('start-up memory released')),
  );
  t.equal(JSON.parse(line).trimmed, onGlibc(), "glibc's arenas trimmed where there is glibc");
  // Start-up fills both 8 MB semi-spaces (16 MB); given back, the young generation starts again
  // from V8's 1 MB minimum and doubles only as the work after start-up needs (1-4 MB seen).
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const young = Number(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)/m.exec(text)?.[1]);
  t.ok(young > 0 && young <= 8 * 2 ** 20, `young generation ${(young / 2 ** 20).toFixed(1)} MB after start-up (≤ 8, not 16)`);
  p.child.kill('SIGTERM');
  t.equal(await new Promise((r) => p.child.once('exit', (c) => r(c))), 0, 'stops cleanly');
});

t.test('a service run on its own needs KAFKA_BROKERS and DATABASE_URL', async (t) => {
  const run = spawnSync(process.execPath, [`${ROOT}services/router/src/main.ts`], {
    cwd: ROOT,
    env: {
      ...process.env,
      KAFKA_BROKERS: '',
      DATABASE_URL: '',
      API_KEY: 'k',
      API_JWT_SECRET: 'j'.repeat(32),
      AES_ENCRYPTION_SECRET: 'a'.repeat(32),
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  t.not(run.status, 0);
  t.match(run.stderr, /KAFKA_BROKERS: is required to run a service on its own/);
  t.match(run.stderr, /DATABASE_URL: is required to run a service on its own/);
});
