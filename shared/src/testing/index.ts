// Helpers for tests: unique databases and topic prefixes, service processes, a local receiver.
// Tests register their own cleanup through tap's teardown.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { type Config, loadConfig } from '../config/index.ts';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Teardown {
  teardown(fn: () => unknown): void;
}

export const uniqueName = (prefix: string) => `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;

/** Environment for a test deployment: fixed test secrets, the broker and database from the test command. */
export function testEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    API_KEY: 'test-admin-key',
    API_JWT_SECRET: 'test-jwt-secret-0123456789abcdef',
    AES_ENCRYPTION_SECRET: 'test-aes-secret-0123456789abcdef',
    KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
    DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/switchyard',
    KAFKA_TOPIC_PREFIX: `${uniqueName('t')}.`,
    KAFKA_PARTITIONS: '3',
    LOG_LEVEL: 'warn',
    EGRESS_ALLOW: '127.0.0.0/8,::1/128',
    ...overrides,
  };
}

export const testConfig = (overrides: Record<string, string> = {}): Config => loadConfig(testEnv(overrides));

/** A fresh database on the test server, dropped at teardown. Returns its URL. */
export async function createTestDatabase(t: Teardown): Promise<string> {
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
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  t.teardown(close);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, respond: (fn) => (answer = fn), close };
}

export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `services/<name>/src/main.ts` as its own process; stopped at teardown. */
export async function startService(
  t: Teardown,
  name: 'gateway' | 'router' | 'sender' | 'attempts',
  env: Record<string, string>,
  ready: RegExp = /consuming|Server listening/,
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [`${ROOT}services/${name}/src/main.ts`], {
    cwd: ROOT,
    env: { ...process.env, ...env, LOG_LEVEL: 'info' },
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
  await waitFor(
    `${name} to start`,
    () => {
      if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${out}`);
      return ready.test(out);
    },
    60_000,
  );
  return { name, child, output: () => out, stop };
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A small JSON client for the gateway's HTTP API. */
export function apiClient(baseUrl: string, token: string) {
  return async function call<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  };
}
