/**
 * A test peer written in Go (infra/pubsub, infra/s3): built once by infra/go-peer.sh, started on a
 * free loopback port and stopped by `close`. infra/test.sh builds each once and passes the binary in
 * the peer's environment variable; without it this builds it (slow the first time). The binary prints
 * "listening HOST:PORT" once it serves and exits when its stdin closes, so a dying test leaves
 * nothing behind. A peer that cannot start fails the test: it never skips.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { waitForStart } from '../progress.ts';

export interface GoPeer {
  /** host:port it listens on. */
  host: string;
  close(): Promise<void>;
}

export interface GoPeerSpec {
  /** For messages: "pubsub peer". */
  what: string;
  /** Its folder under infra/: "pubsub". */
  name: string;
  /** The environment variable infra/test.sh sets to the built binary. */
  binaryVar: string;
}

function binary(spec: GoPeerSpec): string {
  const given = process.env[spec.binaryVar];
  if (given) return given;
  const script = fileURLToPath(new URL('../../../../infra/go-peer.sh', import.meta.url));
  return execFileSync('bash', [script, spec.name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

export async function startGoPeer(spec: GoPeerSpec): Promise<GoPeer> {
  // stdin stays open while we run: the peer exits when it closes.
  const child = spawn(binary(spec), ['-port', '0'], { stdio: ['pipe', 'pipe', 'inherit'] });
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
    spec.what,
    child,
    () => out,
    () => {
      if (spawnError) throw new Error(`${spec.what}: cannot start: ${(spawnError as Error).message}`);
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
