// Periodic summaries of per-record work, so that info stays readable at production rates: the lines
// of each record (a publish, a routed event, a delivered attempt) go to debug, and one info line
// a minute says how much was done, only when something was (docs/operations.md, "Logs").
import type { Logger } from './log.ts';

/** How often a summary line is written while there is traffic. */
export const SUMMARY_INTERVAL_MS = 60_000;

export interface LogSummary<K extends string> {
  /** Counts work done since the last line. */
  add(counts: Partial<Record<K, number>>): void;
  /** Counts `n` (1) of one kind. */
  count(key: K, n?: number): void;
  /** Writes what was counted since the last line, if anything, and stops the timer (at shutdown). */
  stop(): void;
}

/**
 * Every `everyMs` (a minute), one info line `msg` with the counts added since the previous one and
 * the seconds they cover (`interval_s`); nothing at all while nothing was counted. The timer does not
 * keep the process alive.
 */
export function createLogSummary<K extends string>(
  log: Logger,
  msg: string,
  keys: readonly K[],
  everyMs: number = SUMMARY_INTERVAL_MS,
): LogSummary<K> {
  const zero = () => Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  let counts = zero();
  let any = false;
  let since = Date.now();
  const flush = () => {
    const now = Date.now();
    if (any) log.info({ ...(counts as Record<string, number>), interval_s: Math.round((now - since) / 1000) }, msg);
    counts = zero();
    any = false;
    since = now;
  };
  const timer = setInterval(flush, everyMs);
  timer.unref();
  return {
    add(more) {
      for (const k of keys) {
        const n = more[k];
        if (!n) continue;
        counts[k] += n;
        any = true;
      }
    },
    count(key, n = 1) {
      if (!n) return;
      counts[key] += n;
      any = true;
    },
    stop() {
      clearInterval(timer);
      flush();
    },
  };
}
