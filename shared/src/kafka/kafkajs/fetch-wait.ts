// Fetch waits that follow the traffic, for the consumers that wait for fuller batches
// (ConsumeOptions.batchWaitMs): a change to kafkajs 2.2.4's ConsumerGroup, applied once when
// shared/src/kafka/index.ts loads.
//
// kafkajs fixes a consumer's fetch wait and minimum bytes for its life. A consumer that asks the
// broker to hold a fetch until 1 MB has come or a few ms have passed (the router: 3 ms) gets an
// answer every few ms also when nothing comes: an idle router asked the broker about 300 times a
// second, and the broker and the router spent 10-25% of a core on it (docs/performance.md, "Idle
// consumers long-poll"). Here such a consumer's next fetch follows what the last one brought: after
// records, the batch wait (more may be on their way); after none, a long poll that the broker answers
// as soon as a record arrives (minimum 1 byte), and at the latest after IDLE_FETCH_WAIT_MS. The first
// record after a quiet spell is therefore handed over at once, alone, and the batches that follow
// wait as before. A consumer that was busy for its batch wait handling the last fetch does not wait
// again (startFetchMinBytes): at full speed the wait would only slow it down.
//
// The retry tiers' consumer (consumeDelayed) waits at most 200 ms a fetch so that a partition resumed
// when its head is due joins a fetch soon (docs/performance.md, "Retry tiers wait at most 200 ms a
// fetch"); idle, that was five fetches a second of every tier's partitions. With no partition paused
// there is nothing to resume, so its fetch long-polls too, and waits 200 ms again as soon as one is.
import { createRequire } from 'node:module';
import { assertPatchedKafkajs } from './version.ts';

assertPatchedKafkajs('fetch-wait.ts');

/** Longest an idle batch-wait consumer's fetch waits (the broker answers at once when a record comes). */
export const IDLE_FETCH_WAIT_MS = 1_000;

export interface FetchWait {
  /**
   * batch: the wait follows the last fetch (records: the batch wait; none: a long poll); delayed:
   * the short wait while a partition is paused (records waiting for their time), else a long poll.
   */
  kind: 'batch' | 'delayed';
  /** The fetch's minimum bytes while records come (batch). */
  minBytes: number;
  /** The fetch's wait while records come (batch) or while a partition is paused (delayed). */
  maxWaitMs: number;
  /** The wait of a long poll. */
  idleWaitMs: number;
}

/** The parts of kafkajs's ConsumerGroup (src/consumer/consumerGroup) this change relies on. */
export interface ConsumerGroupInternals {
  groupId: string;
  minBytes: number;
  maxWaitTime: number;
  subscriptionState: { paused(): unknown[] };
  fetch(nodeId: number): Promise<Array<{ isEmptyIncludingFiltered(): boolean }>>;
}

/** By consumer group id (its topic prefix included): the groups whose fetch wait follows the traffic. */
const waits = new Map<string, FetchWait>();

/** Makes `groupId`'s fetches follow the traffic; the returned function stops it (at close). */
export function adaptFetchWait(groupId: string, wait: FetchWait): () => void {
  waits.set(groupId, wait);
  return () => {
    if (waits.get(groupId) === wait) waits.delete(groupId);
  };
}

/** What a batch consumer's next fetch asks the broker for, after a fetch that brought records (`got`) or none. */
export function nextFetchWait(wait: FetchWait, got: boolean): { minBytes: number; maxWaitTime: number } {
  return got ? { minBytes: wait.minBytes, maxWaitTime: wait.maxWaitMs } : { minBytes: 1, maxWaitTime: wait.idleWaitMs };
}

/**
 * The minimum bytes of a batch consumer's fetch as it starts, `busyMs` after the last one came back:
 * a consumer that spent at least its batch wait handling what that brought has given records that
 * long to come already, so it takes what is there at once (the batch is as full as the wait would
 * make it). At full speed the wait is then never paid; at a moderate rate it is.
 */
export function startFetchMinBytes(wait: FetchWait, minBytes: number, busyMs: number): number {
  return busyMs >= wait.maxWaitMs ? 1 : minBytes;
}

/** A delayed consumer's fetch wait: short while a partition waits to be resumed, else a long poll. */
export function delayedFetchWait(wait: FetchWait, anyPaused: boolean): number {
  return anyPaused ? wait.maxWaitMs : wait.idleWaitMs;
}

const require = createRequire(import.meta.url);
export const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup.js') as { prototype: ConsumerGroupInternals };

// Marked on kafkajs's prototype, not here: two copies of this module in one process patch it once.
const PATCHED = Symbol.for('switchyard.kafkajs.fetchWaitFollowsTraffic');
const proto = ConsumerGroup.prototype as ConsumerGroupInternals & { [PATCHED]?: true };
if (!proto[PATCHED]) {
  const fetch = proto.fetch;
  if (typeof fetch !== 'function') {
    // Fail loudly: a kafkajs upgrade moved what this change patches (review this module).
    throw new Error('kafkajs ConsumerGroup internals changed: review shared/src/kafka/kafkajs/fetch-wait.ts');
  }
  // When each batch group's last fetch came back (kafkajs fetches again once its batches are handled).
  const returnedAt = new WeakMap<ConsumerGroupInternals, number>();
  proto.fetch = async function (this: ConsumerGroupInternals, nodeId: number) {
    const starting = waits.get(this.groupId);
    // Decided as the fetch starts: a partition paused while it is in flight is resumed (at its due
    // time plus slack, at least 100 ms later) after it has come back, or 1 s later at worst.
    if (starting?.kind === 'delayed') this.maxWaitTime = delayedFetchWait(starting, this.subscriptionState.paused().length > 0);
    const back = returnedAt.get(this);
    if (starting?.kind === 'batch' && back !== undefined)
      this.minBytes = startFetchMinBytes(starting, this.minBytes, performance.now() - back);
    const batches = await fetch.call(this, nodeId);
    const wait = waits.get(this.groupId);
    if (wait?.kind !== 'batch') return batches;
    returnedAt.set(this, performance.now());
    // One group's fetchers (one per broker) share these fields: with several brokers a fetch may use
    // the wait another broker's last fetch chose, which costs a batch or a poll, never a record.
    Object.assign(
      this,
      nextFetchWait(
        wait,
        batches.some((b) => !b.isEmptyIncludingFiltered()),
      ),
    );
    return batches;
  };
  proto[PATCHED] = true;
}
