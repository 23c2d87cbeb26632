/**
 * The Pub/Sub test peer: infra/pubsub (Google's pstest, serving the real Pub/Sub gRPC protocol),
 * started on a free loopback port and stopped by `close`. infra/test.sh builds it once and passes the
 * binary in SWITCHYARD_PUBSUB_PEER; without it this builds it (slow the first time). A peer that
 * cannot start fails the test: it never skips.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { waitForStart } from '../progress.ts';

export interface PubSubPeer {
  /** host:port, as PUBSUB_EMULATOR_HOST and a destination's `endpoint` take it. */
  host: string;
  close(): Promise<void>;
}

function binary(): string {
  const given = process.env.SWITCHYARD_PUBSUB_PEER;
  if (given) return given;
  const script = fileURLToPath(new URL('../../../../infra/pubsub/pubsub.sh', import.meta.url));
  return execFileSync('bash', [script, 'install'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

export async function startPubSubPeer(): Promise<PubSubPeer> {
  // stdin stays open while we run: the peer exits when it closes, so a dying test leaves nothing behind.
  const child = spawn(binary(), ['-port', '0'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let host = '';
  let out = '';
  let spawnError: Error | null = null;
  child.once('error', (err) => (spawnError = err));
  const lines = createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    out += `${line}\n`;
    host ||= /^listening (\S+)$/.exec(line)?.[1] ?? '';
  });
  // As long as it starts (a busy machine may take far longer than an idle one), not a fixed clock.
  await waitForStart(
    'pubsub peer',
    child,
    () => out,
    () => {
      if (spawnError) throw new Error(`pubsub peer: cannot start: ${(spawnError as Error).message}`);
      return host !== '';
    },
  ).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  child.stdout.resume();
  return {
    host,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
        setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
      }),
  };
}
