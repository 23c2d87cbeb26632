// A peer server run as a child process for a test: started on loopback, stopped (and waited for) at teardown.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import type { Teardown } from '../index.ts';
import { type StartWait, waitForStart } from '../progress.ts';

export interface PeerProcess {
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Spawns `cmd` (its own process group, so helpers it starts go with it) and waits until `ready`
 * says so, as long as it is starting (progress.ts); throws with the output when it exits, stops
 * moving or runs past the cap, so the test fails.
 */
export async function startPeerProcess(
  t: Teardown,
  what: string,
  cmd: string,
  args: string[],
  opts: { env?: Record<string, string>; cwd?: string; ready: (output: string) => boolean | Promise<boolean>; wait?: StartWait },
): Promise<PeerProcess> {
  const child = spawn(cmd, args, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let spawnError: Error | null = null;
  child.once('error', (err) => (spawnError = err));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {}
    }, 10_000);
    await exited;
    clearTimeout(timer);
  };
  t.teardown(stop);
  try {
    await waitForStart(
      what,
      child,
      () => out,
      () => {
        if (spawnError) throw new Error(`${what} could not start: ${(spawnError as Error).message}`);
        return opts.ready(out);
      },
      opts.wait,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { child, output: () => out, stop };
}

/** Runs a setup script (installs a peer when missing) and returns its last output line. */
export function runSetup(script: string, args: string[], cwd: string): string {
  const out = execFileSync('bash', [script, ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000 });
  return out.trim().split('\n').pop() ?? '';
}
