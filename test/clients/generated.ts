// What the generated-client suites share: an embedded-mode deployment (one process) with a webhook
// receiver, its served OpenAPI document in a scratch directory, and openapi-generator (the pinned
// jar from Maven Central, infra/openapi-generator.sh) run on it. Any generator failure throws.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  freePort,
  ROOT,
  type Receiver,
  type ServiceProcess,
  startReceiver,
  startService,
  type Teardown,
  testEnv,
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
