// Consumer code every adapter of the Bus port shares (the Kafka bus, kafka/, and the embedded log,
// embedded/): commits, the per-record dispatch, delayed release and the merged-batch bound.
import type { ConsumeOptions, InRecord } from './index.ts';
import { createKeyedDispatch, type KeyedDispatchOptions } from './inflight.ts';
import type { OffsetTracker } from './offset-tracker.ts';
import { RETRY_TIERS_SECONDS } from './topics.ts';

/**
 * The commit of a consumer with records in flight: each call commits, after the calls before it,
 * every partition whose committable offset moved since its last commit. A failed commit is reported
 * and left to the next call.
 */
export function createCommitter<S extends { tracker: OffsetTracker; committed: string | null }>(
  states: () => Iterable<S>,
  write: (due: Array<{ st: S; offset: string }>) => Promise<void>,
  failed: (err: unknown) => void,
): () => Promise<void> {
  let committing: Promise<void> = Promise.resolve();
  return () => {
    committing = committing.then(async () => {
      const due: Array<{ st: S; offset: string }> = [];
      for (const st of states()) {
        const offset = st.tracker.committable();
        if (offset !== null && offset !== st.committed) due.push({ st, offset });
      }
      if (!due.length) return;
      try {
        await write(due);
        for (const { st, offset } of due) st.committed = offset;
      } catch (err) {
        failed(err);
      }
    });
    return committing;
  };
}

/**
 * How late past its due time a delayed partition is resumed: a tenth of the delay, at most a second.
 * Resuming the moment the head is due released one or two records per fetch, and a Kafka fetch
 * returns (and the client decodes) everything up to 1 MiB behind them, dropped again at the pause;
 * with the slack each fetch releases the records of a whole window.
 */
export function releaseSlackMs(delayMs: number): number {
  return Math.min(delayMs / 10, 1000);
}

/**
 * Longest a delayed consumer's fetch waits for data (Kafka: kafka/delayed.ts; kafkajs's default: 5 s). A resumed partition
 * joins only the next fetch, and kafkajs starts that one after the fetch in flight (a long poll of
 * the tiers' other partitions) has returned, or after sleeping this long when every partition is
 * paused; with the default, retries left their tier 2.5 s after they were due at the median and up
 * to 5 s (1 s tier: 0.11 s and 0.23 s with 200 ms; docs/performance.md, "Retry tiers wait at most
 * 200 ms a fetch"). Only while a partition is paused: with none there is nothing to resume, and the
 * fetch long-polls (kafkajs/fetch-wait.ts), so idle tiers are not asked five times a second.
 */
export const DELAYED_FETCH_MAX_WAIT_MS = 200;

/** The longest a record spends in retry tier `tier`: its delay, the release slack and a fetch wait. */
export function tierHopMs(tier: number): number {
  const delay = (RETRY_TIERS_SECONDS[tier] ?? 0) * 1000;
  return delay + releaseSlackMs(delay) + DELAYED_FETCH_MAX_WAIT_MS;
}

/**
 * The retry tier for a record due at an exact time `remainingMs` from now (a rate-limit turn, a
 * scheduled event): the longest that releases it before it is due, slack included, so that it is
 * never released late by the slack of a tier (up to 1 s); the shortest when none does. Retries take backoff's tierFor, the longest not longer than what remains.
 */
export function tierBefore(remainingMs: number): number {
  let chosen = 0;
  RETRY_TIERS_SECONDS.forEach((_, i) => {
    if (tierHopMs(i) <= remainingMs) chosen = i;
  });
  return chosen;
}

/** Due records of a retry tier released together (one produce request and one commit per slice). */
export const DELAYED_RELEASE_SLICE = 500;

/**
 * Releases a slice of due records of one partition together (their handlers run at once, so their
 * writes share requests), then commits through the last one released: one commit per slice, where a
 * commit per record cost more than the records themselves. When a handler fails, the commit stops
 * before its record and the failure is thrown: the caller reads again from that record (records after
 * it that did pass are released twice: at least once, never lost).
 */
export async function releaseSlice<M>(
  slice: M[],
  handle: (m: M) => Promise<void>,
  commitThrough: (last: M) => Promise<void>,
): Promise<void> {
  const results = await Promise.allSettled(slice.map(handle));
  const failed = results.findIndex((r) => r.status === 'rejected');
  const last = (failed < 0 ? slice : slice.slice(0, failed)).at(-1);
  if (last !== undefined) await commitThrough(last);
  if (failed >= 0) throw (results[failed] as PromiseRejectedResult).reason;
}

/** The most records one merged handleBatch call gets (batches of several partitions together). */
export const MERGED_BATCH_MAX_RECORDS = 5_000;

/** The per-record dispatch a consumer's options ask for; shared by the Kafka and the embedded bus. */
export function keyedDispatchOf<T>(o: ConsumeOptions<T>, retry: Pick<KeyedDispatchOptions<InRecord<T>>, 'untilDone'>) {
  return createKeyedDispatch<InRecord<T>>({
    concurrency: Math.max(1, o.concurrency ?? 1),
    keyConcurrency: Math.max(1, o.keyConcurrency ?? o.concurrency ?? 1),
    health: o.keyHealth ?? {},
    keyBacklog: o.keyBacklog ?? 0,
    handle: (record, clock) => (o.handle as NonNullable<typeof o.handle>)(record, clock),
    ...(o.onKeyBacklog ? { divert: o.onKeyBacklog } : {}),
    untilDone: retry.untilDone,
    ...(o.maxInFlightBytes ? { maxInFlightBytes: o.maxInFlightBytes } : {}),
    ...(o.orderedKey ? { ordered: o.orderedKey } : {}),
    ...(o.dispatchKey ? { dispatchKey: o.dispatchKey } : {}),
  });
}
