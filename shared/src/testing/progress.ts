// Waits of the tests (start-ups, counts), bounded by progress rather than by a fixed clock. On a busy machine
// (CI with a load of 10-15 on two cores) a process may need minutes to start where it needs seconds
// alone: embedded mode missed a fixed 60 s wait while it was still working. So a start is waited for
// as long as the process is alive and moving (writing output, or using CPU, itself or its children),
// fails soon once it stops moving (a hang), and is capped overall.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** A start that neither writes nor uses CPU for this long is stuck. */
export const START_STALL_MS = 120_000;
/** Longest any start is waited for, moving or not (tap ends a file after 900 s). */
export const START_CAP_MS = 420_000;

/**
 * CPU clock ticks used so far by `pid` and its descendants (its own and its reaped children's user
 * and system time, plus those of its live children), from /proc; null where there is no /proc.
 */
export function cpuTicks(pid: number, depth = 0): number | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Fields after the command name (which may hold spaces), from the 3rd on: utime is the 14th field.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  let ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  if (depth < 8) {
    let children: string[] = [];
    try {
      children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean);
    } catch {}
    for (const c of children) ticks += cpuTicks(Number(c), depth + 1) ?? 0;
  }
  return ticks;
}

export interface StartWait {
  /** No output and no CPU used for this long: stuck (default START_STALL_MS). */
  stallMs?: number;
  /** The overall bound (default START_CAP_MS). */
  capMs?: number;
  /** Between checks (default 100 ms). */
  pollMs?: number;
}

/**
 * Resolves once `ready()` is true. Throws, with the end of the output, when the process exits first,
 * when it neither writes nor uses CPU for `stallMs`, or after `capMs` in all.
 */
export async function waitForStart(
  what: string,
  child: ChildProcess,
  output: () => string,
  ready: () => boolean | Promise<boolean>,
  opts: StartWait = {},
): Promise<void> {
  const stallMs = opts.stallMs ?? START_STALL_MS;
  const capMs = opts.capMs ?? START_CAP_MS;
  const started = Date.now();
  let moved = started;
  let lastOut = -1;
  let lastCpu: number | null = null;
  const tail = () => output().slice(-3000);
  // Its last words may come after the exit: the pipes close later.
  let closed = false;
  child.once('close', () => (closed = true));
  for (;;) {
    if (await ready()) return;
    if (child.exitCode !== null || child.signalCode !== null) {
      for (let i = 0; i < 20 && !closed; i++) await new Promise((r) => setTimeout(r, 100));
      throw new Error(`${what}: exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${tail()}`);
    }
    const now = Date.now();
    const out = output().length;
    const cpu = child.pid === undefined ? null : cpuTicks(child.pid);
    if (out !== lastOut || (cpu !== null && cpu !== lastCpu)) moved = now;
    lastOut = out;
    lastCpu = cpu;
    if (now - moved > stallMs)
      throw new Error(`${what}: not ready, and no output or CPU use for ${Math.round(stallMs / 1000)} s:\n${tail()}`);
    if (now - started > capMs) throw new Error(`${what}: not ready within ${Math.round(capMs / 1000)} s, though still working:\n${tail()}`);
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 100));
  }
}

/**
 * Waits until `count()` reaches `n`, failing only when it stops growing for `stuckMs`: a count that
 * keeps moving is waited for however slow the machine.
 */
export async function untilCount(what: string, count: () => number, n: number, stuckMs = 90_000): Promise<void> {
  let last = -1;
  let since = Date.now();
  for (;;) {
    const c = count();
    if (c >= n) return;
    if (c !== last) {
      last = c;
      since = Date.now();
    } else if (Date.now() - since > stuckMs) throw new Error(`${what}: stuck at ${c} of ${n}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
