// The webhook receiver (bench/receiver.ts) as a process of its own, so its CPU is measured apart
// from the runner's. It prints its port once listening; the runner reads its counts, latencies and
// per-second series over HTTP (`/__bench/stats`) and resets it between phases (`/__bench/reset`).
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from '../../shared/src/testing/index.ts';
import type { PhaseResult } from './report.ts';
import type { Summary } from './stats.ts';

export interface Receiver {
  url: string;
  /** Base URL for hanging destinations: another loopback address (another origin) unless --hang-origin shared. */
  hangUrl: string;
  child: ChildProcess;
  stats(q?: string): Promise<ReceiverStats>;
  post(path: string, body: unknown): Promise<void>;
  stop(): Promise<void>;
}

/** What the receiver counted: healthy (`ok`), hanging and ceiling paths, since its last reset. */
export interface ReceiverStats {
  now: number;
  received: { ok: number; hang: number; ceiling: number };
  inWindow: { ok: number; hang: number; ceiling: number };
  hungNow: number;
  duplicates: { ok: number; hang: number; ceiling: number };
  verify: PhaseResult['delivery']['verify'];
  latency?: { ok: Summary; hang: Summary; ceiling: Summary };
  series?: { ok: Record<string, number>; hang: Record<string, number>; ceiling: Record<string, number> };
}

/**
 * Starts the receiver; with `hangOrigin` 'separate' it also listens on 127.0.0.2, the hanging
 * destinations' origin (falling back to the healthy one, with a log line, where that address is missing).
 */
export async function startReceiverProcess(hangOrigin: string, log: (s: string) => void): Promise<Receiver> {
  const separate = hangOrigin !== 'shared';
  const child = spawn(process.execPath, [join(ROOT, 'bench/receiver.ts'), ...(separate ? ['--also-listen', '127.0.0.2'] : [])], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { listening: port, hosts } = await new Promise<{ listening: number; hosts: string[] }>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    rl.once('line', (line) => resolve(JSON.parse(line) as { listening: number; hosts: string[] }));
    child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  if (separate && !hosts.includes('127.0.0.2')) log('receiver: 127.0.0.2 unavailable; hanging destinations share the healthy origin');
  return {
    url,
    hangUrl: hosts.includes('127.0.0.2') ? `http://127.0.0.2:${port}` : url,
    child,
    async stats(q = '') {
      const r = await fetch(`${url}/__bench/stats${q ? `?${q}` : ''}`);
      return (await r.json()) as ReceiverStats;
    },
    async post(path, body) {
      const r = await fetch(`${url}${path}`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      await r.text();
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}
