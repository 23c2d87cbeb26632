// What the generated-client suites share: an embedded-mode deployment (one process) with a webhook
// receiver, its served OpenAPI document in a scratch directory, and openapi-generator (the pinned
// jar from Maven Central, infra/openapi-generator.sh) run on it. Any generator failure throws.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import {
  freePort,
  ROOT,
  type Receiver,
  type ServiceProcess,
  startReceiver,
  startService,
  type Teardown,
  testEnv,
  waitFor,
} from '@switchyard/shared/testing/index.ts';

export const execFileAsync = promisify(execFile);

export interface Deployment {
  baseUrl: string;
  apiKey: string;
  receiver: Receiver;
  service: ServiceProcess;
  /** A scratch directory (outside the repository), removed at teardown. */
  scratch: string;
  /** The served document, written to the scratch directory. */
  documentFile: string;
}

/** Starts embedded mode and saves the document it serves; `SWITCHYARD_E2E_MODE` must be `embedded`. */
export async function deployment(t: Teardown, name: string): Promise<Deployment> {
  const scratch = mkdtempSync(join(tmpdir(), `switchyard-${name}-`));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  const port = await freePort();
  const env = testEnv({ API_PORT: String(port), TOPICS: 'user.created' });
  const service = await startService(t, 'gateway', env);
  const receiver = await startReceiver(t);
  const baseUrl = `http://127.0.0.1:${port}`;
  const doc = await (await fetch(`${baseUrl}/api/v1/openapi.json`)).text();
  const documentFile = join(scratch, 'openapi.json');
  writeFileSync(documentFile, doc);
  return { baseUrl, apiKey: env.API_KEY as string, receiver, service, scratch, documentFile };
}

/** Runs a command; a failure throws with its output. */
export function run(cmd: string, args: string[], cwd: string, timeout = 900_000): string {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${e.message}\n${(e.stdout ?? '').slice(-4000)}\n${(e.stderr ?? '').slice(-4000)}`);
  }
}

/** Generates a client with openapi-generator's `generator` into `out` (the document validated first, as by default); any failure throws. */
export function generate(d: Deployment, generator: string, out: string, properties: Record<string, string> = {}): string {
  const jar = run('bash', [join(ROOT, 'infra/openapi-generator.sh'), 'jar'], ROOT).trim();
  const props = Object.entries(properties).map(([k, v]) => `${k}=${v}`);
  return run(
    'java',
    [
      '-jar',
      jar,
      'generate',
      '-g',
      generator,
      '-i',
      d.documentFile,
      '-o',
      out,
      ...(props.length ? ['--additional-properties', props.join(',')] : []),
    ],
    d.scratch,
  );
}

/**
 * The round trip every generated client takes (the program `file` run by `cmd`, with `setup`, `read`
 * and `finish` as its first argument; test/clients/roundtrip.py is the reference): a tenant and a
 * webhook destination, a publish routed to it, the events and the attempts with their event once
 * delivered, a retry, the deletion. Asynchronous: the receiver answers from this process meanwhile.
 */
export async function checkRoundTrip(t: Test, d: Deployment, tenant: string, cmd: string, file: string, cwd: string): Promise<void> {
  const roundTrip = async (...args: string[]) => {
    const { stdout } = await execFileAsync(cmd, [file, ...args], {
      cwd,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, BASE_URL: d.baseUrl, API_KEY: d.apiKey, HOOK_URL: `${d.receiver.url}/hook` },
    });
    return JSON.parse(stdout);
  };
  const setup = await roundTrip('setup');
  t.equal(setup.tenant, tenant, 'tenant');
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
}
