// A bad setting, as an operator meets it: each entry point (the stack launcher, a service on its own,
// embedded mode) prints one line naming the setting and what it must be, and exits with code 2: no
// stack trace, no connection attempt, no hang. A dependency that cannot be reached at start is one
// line too (exit code 1). Which values are refused is shared/test/config.test.ts's
// (loadConfig); here, that every entry point refuses them the same way, and the data directory checks
// that only a start can make.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createServer } from 'node:net';
import { createTestDatabase, listenLocal, ROOT, testEnv } from '@switchyard/shared/testing/index.ts';

const SECRETS = { API_KEY: 'settings-test-key', API_JWT_SECRET: 'j'.repeat(32), AES_ENCRYPTION_SECRET: 'a'.repeat(32) };

/** Far above any start on a loaded machine: only a hang reaches it (then the process is killed). */
const HANG_MS = 120_000;

interface Ended {
  code: number | null;
  hung: boolean;
  stderr: string;
  stdout: string;
}

function run(script: string, env: Record<string, string>): Promise<Ended> {
  // Nothing of the test command's broker, database or data directory: only what the case sets.
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(API_|KAFKA_|DATABASE_|AES_|EGRESS_|DATA_DIR|SWITCHYARD_E2E)/.test(k)),
  );
  const child = spawn(process.execPath, [`${ROOT}${script}`], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    child.kill('SIGKILL');
  }, HANG_MS);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, hung, stderr, stdout });
    }),
  );
}

function refused(t: Test, r: Ended, expected: RegExp, code = 2): void {
  t.notOk(r.hung, 'exits by itself');
  t.equal(r.code, code, `exit code ${code}`);
  const lines = r.stderr.trim().split('\n');
  t.equal(lines.length, 1, 'one line on stderr');
  t.match(lines[0], expected, 'naming the setting and what it must be');
  t.notMatch(r.stderr, /\n\s+at |Error:/, 'no stack trace');
  t.equal(r.stdout, '', 'nothing else printed');
}

const dataDir = (t: Test) => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-settings-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

t.test('stack mode: the launcher and each service refuse a bad setting in one line', async (t) => {
  const [launcher, launcherPorts, gateway, sender, router, replicas] = await Promise.all([
    // The launcher reads the configuration before it starts a broker, a database or a service.
    run('infra/dev/start.ts', { ...SECRETS, API_PORT: 'abc' }),
    // Router and sender take the two ports after it: 65535 leaves them none.
    run('infra/dev/start.ts', { ...SECRETS, METRICS_PORT: '65535' }),
    run('services/gateway/src/main.ts', { ...SECRETS, KAFKA_BROKERS: 'nonsense', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x' }),
    run('services/sender/src/main.ts', { ...SECRETS, KAFKA_BROKERS: '127.0.0.1:1', DATABASE_URL: 'nonsense' }),
    // Well formed, but nothing listens there: found at start, said in one line too.
    run('services/router/src/main.ts', { ...SECRETS, KAFKA_BROKERS: '127.0.0.1:1', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/x' }),
    // One broker's replication factor set without its min.insync.replicas: refused before connecting.
    run('services/attempts/src/main.ts', {
      ...SECRETS,
      KAFKA_BROKERS: '127.0.0.1:1',
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/x',
      KAFKA_REPLICATION_FACTOR: '1',
    }),
  ]);
  t.test('launcher: API_PORT=abc', async (t) =>
    refused(t, launcher, /^switchyard start:stack: invalid configuration: API_PORT: must be integer$/),
  );
  t.test('launcher: METRICS_PORT=65535, the next two ports taken by router and sender', async (t) =>
    refused(t, launcherPorts, /^switchyard start:stack: invalid configuration: METRICS_PORT: must be at most 65533 here /),
  );
  t.test('gateway: KAFKA_BROKERS=nonsense', async (t) =>
    refused(
      t,
      gateway,
      /^switchyard gateway: invalid configuration: KAFKA_BROKERS: "nonsense" is not host:port \(a port from 1 to 65535\)$/,
    ),
  );
  t.test('sender: DATABASE_URL=nonsense, not taken for localhost', async (t) => {
    refused(t, sender, /^switchyard sender: invalid configuration: DATABASE_URL: must be a postgres:\/\/ .*URL/);
    t.notMatch(sender.stderr, /ECONNREFUSED|127\.0\.0\.1/, 'no connection was tried');
  });
  t.test('router: a DATABASE_URL nothing answers', async (t) =>
    refused(t, router, /^switchyard router: failed to start: the database \(DATABASE_URL\): connect ECONNREFUSED 127\.0\.0\.1:1$/, 1),
  );
  t.test('attempts: KAFKA_REPLICATION_FACTOR=1 beside the default KAFKA_MIN_INSYNC_REPLICAS=2', async (t) =>
    refused(
      t,
      replicas,
      /^switchyard attempts: invalid configuration: KAFKA_MIN_INSYNC_REPLICAS: 2 is above KAFKA_REPLICATION_FACTOR \(1\), so no write could ever be accepted; at most 1 \(a single broker: both 1\)$/,
    ),
  );
});

t.test('EGRESS_ALLOW, which only the sender checks: refused before anything starts', async (t) => {
  const EGRESS_ALLOW = '127.0.0.1/40, *';
  const expected =
    /^switchyard (embedded|sender): invalid configuration: EGRESS_ALLOW: "127\.0\.0\.1\/40": prefix length must be an integer from 0 to 32; EGRESS_ALLOW: "\*": /;
  const [embedded, sender, launcher, withOthers] = await Promise.all([
    run('services/embedded/src/main.ts', { ...SECRETS, EGRESS_ALLOW, DATA_DIR: dataDir(t) }),
    // Nothing listens at either address: the setting is refused before either is tried.
    run('services/sender/src/main.ts', {
      ...SECRETS,
      EGRESS_ALLOW,
      KAFKA_BROKERS: '127.0.0.1:1',
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/x',
    }),
    // The launcher checks it with the rest, before it starts a broker, a database or a service.
    run('infra/dev/start.ts', { ...SECRETS, EGRESS_ALLOW }),
    // Beside another bad setting: both in the one line, not one start each.
    run('services/sender/src/main.ts', {
      ...SECRETS,
      EGRESS_ALLOW,
      LOG_LEVEL: 'bogus',
      KAFKA_BROKERS: '127.0.0.1:1',
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/x',
    }),
  ]);
  t.test('embedded mode', async (t) => refused(t, embedded, expected));
  t.test('the sender on its own', async (t) => {
    refused(t, sender, expected);
    t.notMatch(sender.stderr, /ECONNREFUSED/, 'no connection was tried');
  });
  t.test('the stack launcher', async (t) =>
    refused(t, launcher, /^switchyard start:stack: invalid configuration: EGRESS_ALLOW: "127\.0\.0\.1\/40": /),
  );
  t.test('with another bad setting: every problem in one line', async (t) =>
    refused(t, withOthers, /^switchyard sender: invalid configuration: LOG_LEVEL: must be one of .*; EGRESS_ALLOW: "127\.0\.0\.1\/40": /),
  );
});

t.test('a port another process holds: one line naming the setting, exit code 1', async (t) => {
  const port = String((await listenLocal(t, createServer())).port);
  const inUse = (service: string, setting: string) =>
    new RegExp(
      `^switchyard ${service}: failed to start: ${setting} \\(127\\.0\\.0\\.1:${port}\\): already in use by another process; set another port \\(0 picks a free one\\)$`,
    );
  const [router, embedded] = await Promise.all([
    // The test command's broker and a database of its own: the ops port is bound before the service joins its groups.
    run('services/router/src/main.ts', {
      ...testEnv({ DATABASE_URL: await createTestDatabase(t) }),
      LOG_LEVEL: 'error',
      METRICS_HOST: '127.0.0.1',
      METRICS_PORT: port,
    }),
    run('services/embedded/src/main.ts', { ...SECRETS, DATA_DIR: dataDir(t), LOG_LEVEL: 'error', API_HOST: '127.0.0.1', API_PORT: port }),
  ]);
  t.test('a service: METRICS_PORT', async (t) => refused(t, router, inUse('router', 'METRICS_PORT'), 1));
  t.test('embedded mode: API_PORT', async (t) => refused(t, embedded, inUse('embedded', 'API_PORT'), 1));
});

t.test("a listen host that is not this host's, or a name that does not resolve: one line naming the host setting", async (t) => {
  const router = async (host: string) =>
    run('services/router/src/main.ts', {
      ...testEnv({ DATABASE_URL: await createTestDatabase(t) }),
      LOG_LEVEL: 'error',
      METRICS_HOST: host,
      METRICS_PORT: '0',
    });
  // TEST-NET-3 (RFC 5737): no host's address; .invalid (RFC 2606): no name resolves.
  const [foreign, unresolved] = await Promise.all([router('203.0.113.7'), router('nonsense.invalid')]);
  t.test('an address of another host', async (t) =>
    refused(t, foreign, /^switchyard router: failed to start: METRICS_HOST \(203\.0\.113\.7:0\): is not an address of this host$/, 1),
  );
  t.test('a name nothing resolves', async (t) =>
    refused(
      t,
      unresolved,
      /^switchyard router: failed to start: METRICS_HOST \(nonsense\.invalid:0\): is not a name this host resolves$/,
      1,
    ),
  );
});

t.test('embedded mode: a DATA_DIR that cannot be a directory, weak secrets, a database nothing answers', async (t) => {
  const fresh = dataDir(t);
  const [underFile, underProc, unwritable, weak, noDatabase, noCertificate, noCaFile, generated] = await Promise.all([
    // No secrets, which this start cannot keep: the other settings are still read, their problems named too.
    run('services/embedded/src/main.ts', { DATA_DIR: '/etc/passwd/x', API_TYPE_NAMES: 'bogus' }),
    // Node's recursive mkdir never returns here (100% CPU, deaf to SIGTERM): made one level at a time.
    run('services/embedded/src/main.ts', { ...SECRETS, DATA_DIR: '/proc/x' }),
    // A directory that exists and cannot be written, even by root (access(2) says it can).
    run('services/embedded/src/main.ts', { ...SECRETS, DATA_DIR: '/sys/kernel' }),
    run('services/embedded/src/main.ts', { API_KEY: 'k', API_JWT_SECRET: 'x', AES_ENCRYPTION_SECRET: 'short', DATA_DIR: dataDir(t) }),
    run('services/embedded/src/main.ts', { ...SECRETS, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/x', DATA_DIR: dataDir(t) }),
    run('services/embedded/src/main.ts', {
      ...SECRETS,
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/x?sslmode=verify-full&sslrootcert=/nonexistent/root.pem',
      DATA_DIR: dataDir(t),
    }),
    // Node would warn at the first TLS connection and go on without it.
    run('services/embedded/src/main.ts', { ...SECRETS, NODE_EXTRA_CA_CERTS: '/nonexistent/ca.pem', DATA_DIR: dataDir(t) }),
    // No secrets supplied: this start generates them, then fails.
    run('services/embedded/src/main.ts', { API_TYPE_NAMES: 'bogus', DATA_DIR: fresh }),
  ]);
  t.test('a first start that fails keeps no secrets file, so the next one prints its new key', async (t) => {
    refused(t, generated, /^switchyard embedded: invalid configuration: API_TYPE_NAMES: must be one of /);
    t.notOk(existsSync(join(fresh, 'secrets.env')), 'no secrets.env left');
  });
  t.test('DATABASE_URL naming a certificate file that is not there: one line, as any database failure', async (t) =>
    refused(
      t,
      noCertificate,
      /^switchyard embedded: failed to start: the database \(DATABASE_URL\): ENOENT: no such file or directory, open '\/nonexistent\/root\.pem'$/,
      1,
    ),
  );
  t.test("NODE_EXTRA_CA_CERTS naming a file that is not there: refused at start, after Node's own warning", async (t) => {
    // Node writes its line as modules make their first TLS context, and alone would go on without the file.
    const [node, ...ours] = noCaFile.stderr.trim().split('\n');
    t.match(node, /^Warning: Ignoring extra certs from `\/nonexistent\/ca\.pem`/, "Node's line");
    refused(
      t,
      { ...noCaFile, stderr: ours.join('\n') },
      /^switchyard embedded: invalid configuration: NODE_EXTRA_CA_CERTS: cannot read \/nonexistent\/ca\.pem \(ENOENT\)$/,
    );
  });
  t.test('DATABASE_URL nothing answers: as a service on its own says it', async (t) =>
    refused(t, noDatabase, /^switchyard embedded: failed to start: the database \(DATABASE_URL\): connect ECONNREFUSED 127\.0\.0\.1:1$/, 1),
  );
  t.test('DATA_DIR=/etc/passwd/x beside another bad setting: both on the one line', async (t) => {
    refused(t, underFile, /^switchyard embedded: invalid configuration: DATA_DIR: \/etc\/passwd is not a directory/);
    t.match(underFile.stderr, /; API_TYPE_NAMES: must be one of /);
    t.notMatch(underFile.stderr, /API_KEY|AES_ENCRYPTION_SECRET|API_JWT_SECRET/, 'not the secrets it would have generated');
  });
  t.test('DATA_DIR=/sys/kernel, a directory nobody can write', async (t) =>
    refused(t, unwritable, /^switchyard embedded: invalid configuration: DATA_DIR: \/sys\/kernel is not writable \(E[A-Z]+: /),
  );
  t.test('DATA_DIR=/proc/x', async (t) =>
    refused(t, underProc, /^switchyard embedded: invalid configuration: DATA_DIR: cannot create \/proc\/x \(ENOENT/),
  );
  t.test('API_JWT_SECRET=x, AES_ENCRYPTION_SECRET=short: the minimum is named', async (t) => {
    refused(t, weak, /^switchyard embedded: invalid configuration: .*API_JWT_SECRET: must be at least 32 characters/);
    t.match(weak.stderr, /AES_ENCRYPTION_SECRET: must be at least 32 characters/);
    t.notMatch(weak.stderr, /short/, 'the value is not echoed');
  });
});
