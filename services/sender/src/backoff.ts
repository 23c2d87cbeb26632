import { RETRY_TIERS_SECONDS } from '@switchyard/shared/bus/topics.ts';

export interface RetryPolicy {
  /** Explicit delays in seconds (RETRY_SCHEDULE); empty: intervalSeconds doubling. */
  schedule: readonly number[];
  intervalSeconds: number;
  /** RETRY_MAX_LIMIT: the most retries, whichever gives the delays. */
  maxRetries: number;
  /** Longest wait a destination's Retry-After may ask for. */
  maxRetryAfterMs: number;
}

/**
 * Delay before the retry that follows the failed attempt `attemptNumber` (1 = the first attempt),
 * or null when retries are exhausted. A schedule gives the n-th retry's delay and the interval
 * (doubling each retry) is used without one; either way maxRetries caps the count, so a schedule
 * gives min(its length, maxRetries) retries. ±10% jitter spreads retries
 * of many deliveries that failed together. A Retry-After longer than the delay is honoured up to
 * maxRetryAfterMs; a shorter one never brings a retry forward.
 */
export function retryDelayMs(
  attemptNumber: number,
  policy: RetryPolicy,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number | null {
  const retryIndex = attemptNumber - 1;
  const limit = policy.schedule.length ? Math.min(policy.schedule.length, policy.maxRetries) : policy.maxRetries;
  if (retryIndex >= limit) return null;
  const baseSeconds = policy.schedule.length ? (policy.schedule[retryIndex] as number) : policy.intervalSeconds * 2 ** retryIndex;
  const jittered = baseSeconds * 1000 * (0.9 + 0.2 * random());
  const wanted = retryAfterMs !== undefined ? Math.max(jittered, Math.min(retryAfterMs, policy.maxRetryAfterMs)) : jittered;
  return Math.round(wanted);
}

/** The retry tier a delivery waits in: the longest tier not longer than what remains. */
export function tierFor(remainingMs: number): number {
  let chosen = 0;
  RETRY_TIERS_SECONDS.forEach((s, i) => {
    if (s * 1000 <= remainingMs) chosen = i;
  });
  return chosen;
}
