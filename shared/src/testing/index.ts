// Helpers for tests: unique databases and topic prefixes, service processes, a local receiver.
// Tests register their own cleanup through tap's teardown.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { connect, type AddressInfo, createServer as createTcpServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { type Config, loadConfig } from '../config/index.ts';
import { createDb, type Knex } from '../db/index.ts';
import { copyMigratedEmbeddedDb } from './embedded-template.ts';
import { waitForStart } from './progress.ts';

export { cpuTicks, START_CAP_MS, START_STALL_MS, type StartWait, untilCount, waitForStart } from './progress.ts';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Whether this process runs on glibc (its report names the runtime's version; musl's does not). */
export const onGlibc = (): boolean =>
  Boolean((process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime);

export const uniqueName = (prefix: string) => `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;

/**
 * Which deployment the end-to-end suites run against: 'services' (default: a process per service,
 * the test command's Kafka and Postgres) or 'embedded' (SWITCHYARD_E2E_MODE=embedded: one
 * `services/embedded` process on its own log and database in a fresh DATA_DIR, as `npm start` runs).
 */
export function e2eMode(): 'services' | 'embedded' {
  return process.env.SWITCHYARD_E2E_MODE === 'embedded' ? 'embedded' : 'services';
}

/** A fresh directory for an embedded deployment, removed when the test process exits. */
function embeddedDataDir(): string {
  const base = process.env.SWITCHYARD_TEST_RUN ?? tmpdir();
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(base, 'embedded-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Environment for a test deployment: fixed test secrets, the broker and database from the test command. */
export function testEnv(overrides: Record<string, string> = {}): Record<string, string> {
  const embedded = e2eMode() === 'embedded';
  return {
    API_KEY: 'test-admin-key',
    API_JWT_SECRET: 'test-jwt-secret-0123456789abcdef',
    AES_ENCRYPTION_SECRET: 'test-aes-secret-0123456789abcdef',
    KAFKA_BROKERS: embedded ? '' : (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'),
    DATABASE_URL: embedded ? '' : (process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/switchyard'),
    ...(embedded ? { DATA_DIR: embeddedDataDir() } : {}),
    KAFKA_TOPIC_PREFIX: `${uniqueName('t')}.`,
    KAFKA_PARTITIONS: '3',
    // The test command's single broker (the cluster suite overrides both).
    KAFKA_REPLICATION_FACTOR: '1',
    KAFKA_MIN_INSYNC_REPLICAS: '1',
    LOG_LEVEL: 'warn',
    EGRESS_ALLOW: '127.0.0.0/8,::1/128',
    ...overrides,
  };
}

export const testConfig = (overrides: Record<string, string> = {}): Config => loadConfig(testEnv(overrides));

/** A fresh database on the test server, dropped at teardown. Returns its URL. */
export async function createTestDatabase(t: Teardown): Promise<string> {
  // Embedded mode: each deployment's database lives in its own DATA_DIR (empty DATABASE_URL).
  if (e2eMode() === 'embedded') return '';
  const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/switchyard';
  const name = uniqueName('sy_test');
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Sets the answer for subsequent requests (status, body, delay). */
  respond(fn: (req: ReceivedRequest) => { status?: number; body?: string; headers?: Record<string, string>; delayMs?: number }): void;
  close(): Promise<void>;
}

/** A local HTTP receiver standing in for a tenant's webhook endpoint. */
export async function startReceiver(t: Teardown): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let answer: Parameters<Receiver['respond']>[0] = () => ({ status: 200, body: 'ok' });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      requests.push(r);
      const a = answer(r);
      setTimeout(() => {
        res.writeHead(a.status ?? 200, { 'content-type': 'text/plain', ...(a.headers ?? {}) });
        res.end(a.body ?? '');
      }, a.delayMs ?? 0);
    });
  });
  const { url, close } = await listenLocal(t, server);
  return { url, requests, respond: (fn) => (answer = fn), close };
}

/**
 * Listens on a free loopback port until `t` tears down or `close()`. Closing ends the connections
 * still open first: a server's own close waits for every one, and a peer holding one would hold the
 * test. `url` is the server's as `http://`.
 */
export async function listenLocal(t: Teardown, server: NetServer): Promise<{ port: number; url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const close = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  t.teardown(close);
  const { port } = server.address() as AddressInfo;
  return { port, url: `http://127.0.0.1:${port}`, close };
}

export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const embeddedProcesses = new Map<string, { port: string; process: ServiceProcess }>();

/**
 * Starts `services/<name>/src/main.ts` as its own process; stopped at teardown.
 *
 * In embedded mode (e2eMode()) every service of one deployment (one DATA_DIR) is the same
 * `services/embedded` process: the first call starts it, later calls return it, or start it again
 * when it has exited (a test that kills "the sender" kills the whole process and restarts it). A
 * second gateway on another API_PORT becomes a TCP forwarder to the one gateway.
 */
export async function startService(
  t: Teardown,
  name: 'gateway' | 'router' | 'sender' | 'attempts',
  env: Record<string, string>,
  ready: RegExp = /consuming|Server listening/,
): Promise<ServiceProcess> {
  if (e2eMode() === 'embedded') {
    const dir = env.DATA_DIR ?? '';
    const running = embeddedProcesses.get(dir);
    if (running && running.process.child.exitCode === null && running.process.child.signalCode === null) {
      if (name === 'gateway' && env.API_PORT && env.API_PORT !== running.port) await forward(t, Number(env.API_PORT), Number(running.port));
      return running.process;
    }
    // A new deployment's database starts as a copy of a migrated one: these suites are about the
    // pipeline, and a first start is the embedded suite's own (embedded-template.ts).
    if (dir && !env.DATABASE_URL && !existsSync(join(dir, 'pg'))) await copyMigratedEmbeddedDb(join(dir, 'pg'));
    const started = await startProcess(t, 'embedded', `${ROOT}services/embedded/src/main.ts`, env, /embedded mode ready/);
    embeddedProcesses.set(dir, { port: env.API_PORT ?? '3333', process: started });
    return started;
  }
  // SWITCHYARD_E2E_BUILD=DIR: the services as `npm run build` emits them (plain JavaScript), as production runs them.
  const built = process.env.SWITCHYARD_E2E_BUILD;
  return startProcess(t, name, built ? join(built, `services/${name}/src/main.js`) : `${ROOT}services/${name}/src/main.ts`, env, ready);
}

/** The ops port a service process logged ('ops listening'). */
export async function opsPort(p: ServiceProcess): Promise<number> {
  return waitFor(`${p.name} ops listener`, () => Number(/"metrics_port":(\d+)/.exec(p.output())?.[1]) || undefined);
}

/** Where a started service serves /metrics: its ops port, or in embedded mode the one process's API. */
export async function metricsUrl(p: ServiceProcess, apiBase: string): Promise<string> {
  return e2eMode() === 'embedded' ? `${apiBase}/metrics` : `http://127.0.0.1:${await opsPort(p)}/metrics`;
}

/** The samples of a Prometheus text exposition: name, labels, value. */
export function parseMetrics(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  const out: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of the samples of `name` whose labels include `where`; undefined when there is none. */
export function metricSum(text: string, name: string, where: Record<string, string> = {}): number | undefined {
  const hits = parseMetrics(text).filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v));
  return hits.length ? hits.reduce((a, s) => a + s.value, 0) : undefined;
}

/** Accepts TCP connections on `from` and pipes each to `to` on 127.0.0.1, until teardown. */
async function forward(t: Teardown, from: number, to: number): Promise<void> {
  const server = createTcpServer((socket) => {
    const upstream = connect(to, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((r) => server.listen(from, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
}

async function startProcess(
  t: Teardown,
  name: string,
  script: string,
  env: Record<string, string>,
  ready: RegExp,
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [script], {
    cwd: ROOT,
    env: { ...process.env, METRICS_PORT: '0', ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill(signal);
    return exited;
  };
  t.teardown(() => stop());
  // As long as it starts (writes or uses CPU): minutes on a busy machine, where 60 s once ran out.
  await waitForStart(
    name,
    child,
    () => out,
    () => ready.test(out),
  );
  return { name, child, output: () => out, stop };
}

/** A loopback port free when it returns: nothing listens on it until something binds it. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A small JSON client for the gateway's HTTP API. */
export function apiClient(baseUrl: string, token: string) {
  return async function call<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T; headers: Headers }> {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
  };
}

export interface Stack {
  env: Record<string, string>;
  port: number;
  /** The gateway: `http://127.0.0.1:<port>`. */
  base: string;
  /** apiClient on `base` with the admin key (env.API_KEY). */
  api: ReturnType<typeof apiClient>;
  attempts: ServiceProcess;
  router: ServiceProcess;
  sender: ServiceProcess;
  gateway: ServiceProcess;
}

/**
 * A deployment for an end-to-end test, stopped at teardown: testEnv with a fresh test database (none
 * when `overrides` sets DATABASE_URL), a free API_PORT and `overrides`. The attempts service starts
 * first, on its own: it migrates, and the others would wait on the migration lock anyway; in embedded
 * mode its call starts the one process, which the other calls then return (started together, each
 * would start one). Then router, sender and gateway together. In embedded mode the four handles are
 * the same process.
 */
export async function startStack(t: Teardown, overrides: Record<string, string> = {}): Promise<Stack> {
  const API_PORT = String(await freePort());
  const env = testEnv({ DATABASE_URL: overrides.DATABASE_URL ?? (await createTestDatabase(t)), API_PORT, ...overrides });
  const attempts = await startService(t, 'attempts', env);
  const [router, sender, gateway] = await Promise.all([
    startService(t, 'router', env),
    startService(t, 'sender', env),
    startService(t, 'gateway', env),
  ]);
  const port = Number(env.API_PORT);
  const base = `http://127.0.0.1:${port}`;
  return { env, port, base, api: apiClient(base, env.API_KEY as string), attempts, router, sender, gateway };
}

// Fault runs (test/faults): publishing through restarts, and what reached the end.

/**
 * Publishes `count` events with caller ids (so a publish that got no answer can be repeated without
 * a second event), `concurrency` at a time, repeating each until it is answered 202. Calls `at(n)`
 * after the n-th acceptance.
 */
export async function publishAll(
  api: ReturnType<typeof apiClient>,
  tenant: string,
  prefix: string,
  count: number,
  concurrency: number,
  at: (accepted: number) => Promise<void> | void,
): Promise<{ accepted: Set<string>; refused: Record<string, number> }> {
  const accepted = new Set<string>();
  const refused: Record<string, number> = {};
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const id = `${prefix}-${next++}`;
      for (;;) {
        let status: number | string;
        try {
          status = (await api('POST', '/api/v1/publish', { tenant_id: tenant, id, topic: 'order.paid', data: { id } })).status;
        } catch (err) {
          status = (err as { cause?: { code?: string } }).cause?.code ?? 'network';
        }
        if (status === 202) break;
        refused[status] = (refused[status] ?? 0) + 1;
        await new Promise((r) => setTimeout(r, 200));
      }
      accepted.add(id);
      await at(accepted.size);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { accepted, refused };
}

/**
 * A Kafka broker of a test's own (infra/kafka/kafka.sh on free ports, in the run's directory), for
 * tests that stop and start it; stopped and removed at teardown. No SASL listener: the suite's broker
 * holds KAFKA_SASL_PORT.
 */
export async function startOwnBroker(t: Teardown, name: string): Promise<{ brokers: string; kafka(cmd: 'start' | 'stop'): void }> {
  const [kafkaPort, controllerPort] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), `${name}-`));
  const kafka = (cmd: 'start' | 'stop') => {
    execFileSync('bash', [`${ROOT}infra/kafka/kafka.sh`, cmd], {
      env: {
        ...process.env,
        KAFKA_PORT: String(kafkaPort),
        KAFKA_CONTROLLER_PORT: String(controllerPort),
        KAFKA_DATA_DIR: dir,
        KAFKA_SASL_PORT: '',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  };
  kafka('start');
  t.teardown(() => {
    kafka('stop');
    rmSync(dir, { recursive: true, force: true });
  });
  return { brokers: `127.0.0.1:${kafkaPort}`, kafka };
}

/** The most of `times` (ms, any order) that fall in one window of `windowMs` (half-open): a rate limit's check. */
export function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, from = 0; i < sorted.length; i++) {
    while ((sorted[i] as number) - (sorted[from] as number) >= windowMs) from++;
    best = Math.max(best, i - from + 1);
  }
  return best;
}

/** Waits until every accepted event has a final attempt; returns those still without one at the deadline. */
export async function unfinished(db: Knex, tenant: string, accepted: Set<string>, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let missing: string[] = [...accepted];
  while (Date.now() < deadline) {
    const rows = (await db('attempts').where({ tenant_id: tenant, final: true }).distinct('event_id')) as { event_id: string }[];
    const done = new Set(rows.map((r) => r.event_id));
    missing = [...accepted].filter((id) => !done.has(id));
    if (!missing.length) return [];
    await new Promise((r) => setTimeout(r, 500));
  }
  return missing;
}

export function duplicatesAt(rx: Receiver, path: string): { received: number; unique: number; duplicates: number } {
  const ids = rx.requests.filter((r) => r.url === path).map((r) => String(r.headers['x-outpost-event-id']));
  const unique = new Set(ids).size;
  return { received: ids.length, unique, duplicates: ids.length - unique };
}

export interface FaultStack {
  env: Record<string, string>;
  db: Knex;
  /** The running instance of each service; a test that restarts one puts the new one here. */
  procs: Record<'gateway' | 'router' | 'sender' | 'attempts', ServiceProcess>;
  api: ReturnType<typeof apiClient>;
  rx: Receiver;
  /** SIGKILL, resolved once the process is gone. */
  kill(p: ServiceProcess): Promise<void>;
}

/**
 * The four services as processes on a database of their own, 4 partitions and short retries, for a
 * fault run: its processes live until `t` ends, so start it in the test that outlives the restarts.
 */
export async function startFaultStack(t: Teardown): Promise<FaultStack> {
  const { env, api, gateway, router, sender, attempts } = await startStack(t, {
    TOPICS: 'order.paid',
    KAFKA_PARTITIONS: '4',
    RETRY_SCHEDULE: '1,1,1',
    DELIVERY_TIMEOUT_SECONDS: '2',
  });
  const db = createDb({ url: env.DATABASE_URL as string, poolMax: 2 });
  t.teardown(() => db.destroy());
  return {
    env,
    db,
    procs: { gateway, router, sender, attempts },
    api,
    rx: await startReceiver(t),
    async kill(p) {
      p.child.kill('SIGKILL');
      if (p.child.exitCode === null && p.child.signalCode === null) await new Promise((r) => p.child.once('exit', r));
    },
  };
}

/** What createTopicReady needs of a kafkajs admin client. */
interface TopicAdmin {
  createTopics(o: { topics: Array<{ topic: string; numPartitions: number }> }): Promise<boolean>;
  fetchTopicMetadata(o: { topics: string[] }): Promise<{ topics: Array<{ partitions: Array<{ leader: number }> }> }>;
}

/**
 * Creates a topic and waits until each partition has a leader. kafkajs's own `waitForLeaders` polls
 * the metadata but gives up on UNKNOWN_TOPIC_OR_PARTITION, which a busy broker answers for a topic
 * it has just created; here every error is tried again until the deadline.
 */
export async function createTopicReady(admin: TopicAdmin, topic: string, numPartitions: number, timeoutMs = 30_000): Promise<void> {
  await waitFor(`topic ${topic} created`, () => admin.createTopics({ topics: [{ topic, numPartitions }] }).then(() => true), timeoutMs);
  await waitForLeaders(admin, topic, numPartitions, timeoutMs);
}

/** Waits until the broker's metadata gives each partition of a topic made elsewhere a leader. */
export async function waitForLeaders(
  admin: Pick<TopicAdmin, 'fetchTopicMetadata'>,
  topic: string,
  numPartitions: number,
  timeoutMs = 30_000,
): Promise<void> {
  await waitFor(
    `leaders of ${topic}`,
    async () => {
      const partitions = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]?.partitions ?? [];
      return partitions.length === numPartitions && partitions.every((p) => p.leader >= 0);
    },
    timeoutMs,
  );
}
