// The Bus port: the narrow interface every service uses to write and read records, whatever carries
// them. Two adapters implement it: the Kafka bus (../kafka/, kafkajs against a real cluster) and the
// embedded log (../embedded/, files under DATA_DIR for embedded mode). runtime.ts picks one; service
// code never knows which. shared/test/bus-conformance.test.ts runs one suite against both.
//
// This folder is transport-neutral and imports neither adapter (shared/test/bus-boundaries.test.ts):
// the port (here), the topic catalogue and retry tiers (topics.ts), record values (record-codec.ts)
// and the consumer code both adapters share (consume.ts, coalesce.ts, inflight.ts, offset-tracker.ts, byte-budget.ts).
import type { AfterKey, KeyClock, KeyHealth } from './inflight.ts';
import type { TopicDef } from './topics.ts';

export type { AfterKey, KeyClock } from './inflight.ts';

export interface OutRecord {
  key: string;
  value: unknown;
  headers?: Record<string, string>;
}

export interface InRecord<T = unknown> {
  topic: string;
  partition: number;
  offset: string;
  key: string;
  value: T;
  headers: Record<string, string>;
  timestamp: number;
  /** Set when the value is not valid JSON; `value` is then undefined and `raw` holds the bytes. */
  decodeError?: string;
  /** The value's bytes as written: with a decode error, or for every record with `keepRaw`. */
  raw?: Buffer | null;
}

export interface TopicRecords {
  topic: TopicDef;
  records: OutRecord[];
}

export interface BusProducer {
  /** Resolves once every in-sync replica has the records (acks=all). */
  send(topic: TopicDef, records: OutRecord[]): Promise<void>;
  /** Records for several topics in one produce request: one round trip instead of one per topic. */
  sendMany(batches: TopicRecords[]): Promise<void>;
  close(): Promise<void>;
}

export interface ConsumeOptions<T> {
  groupId: string;
  topics: TopicDef[];
  /**
   * Handles one record. Throwing means our own fault: the record is retried in place and its
   * offset not committed until it passes. A destination's failure is data, not an exception.
   * It may resolve to the rest of the record's work, run once the key's slot is free (AfterKey).
   * A handler that first waits for something other than its key (a rate-limit turn) calls
   * `clock.restart()` when that wait ends: only the time after counts toward keyHealth.
   */
  handle?(record: InRecord<T>, clock: KeyClock): Promise<void> | Promise<AfterKey>;
  /**
   * Alternative to handle, for batched writes: one call per fetched batch, its offsets committed only
   * after it. The Kafka bus merges the batches of the partitions fetched together into one call (up
   * to MERGED_BATCH_MAX_RECORDS records, each partition's in order) and, after a failed merged call,
   * handles each partition's batch again alone; the embedded log does the same with what every
   * partition holds when it reads (one read of each, at most MERGED_BATCH_MAX_RECORDS in all).
   * Either way the handler must be safe to run again on records it may have partly handled.
   */
  handleBatch?(records: InRecord<T>[]): Promise<void>;
  /** Records in flight at once per partition (default 1: one after another). */
  concurrency?: number;
  /** Records in flight at once per dispatch key (default: concurrency). */
  keyConcurrency?: number;
  /**
   * The key a record is dispatched by in this process (default: its record key): keyConcurrency,
   * keyHealth, keyBacklog, orderedKey and divertsNow all count per dispatch key. A record key only
   * decides the partition; a consumer whose records name what they belong to more narrowly than
   * their key (a delivery: its destination's tenant and id, keyed by the id alone) dispatches by
   * that. Only the order within a partition is kept, so records of one dispatch key should share a
   * record key. Must not throw: a record whose value did not decode comes too (`value` undefined).
   */
  dispatchKey?(record: InRecord<T>): string;
  /**
   * Keys that stop keeping up: a key is stalled while its oldest record in flight has run
   * `stallMs`, and slow (one slot instead of keyConcurrency) after a record took `slowMs`, until one
   * finishes sooner. A key that keeps up is never diverted, however busy.
   */
  keyHealth?: KeyHealth;
  /** Records of a stalled key allowed to wait for a slot (default 0); the rest go to onKeyBacklog. */
  keyBacklog?: number;
  /**
   * Bytes of records (their encoded values) in flight at once across the consumer's partitions;
   * one record always fits. Bounds the memory a consumer holds whatever the size of events.
   */
  maxInFlightBytes?: number;
  /**
   * Takes a record of a stalled key instead of handle (for example, parks it for later), so a stuck
   * key cannot fill the partition. `stalledMs` says for how long the key has been stalled.
   */
  onKeyBacklog?(record: InRecord<T>, stalledMs: number): Promise<void>;
  /**
   * True for a record whose key keeps its order (an ordered destination's delivery): its key runs
   * one record at a time in offset order and is never handed to onKeyBacklog.
   */
  orderedKey?(record: InRecord<T>): boolean;
  commitIntervalMs?: number;
  fromBeginning?: boolean;
  /**
   * Every record comes with its value's bytes as written (`raw`) besides the decoded value, for a
   * consumer that may pass a record on as it came (the router's dead letters). Off by default: a
   * record in flight would hold its bytes too.
   */
  keepRaw?: boolean;
  /**
   * Every instance gets every record written from its start on, nothing earlier, and commits
   * nothing (a cache's invalidations): on Kafka a group of its own per instance (`groupId` plus a
   * random suffix; with no offsets committed it goes once the instance leaves), in the embedded log
   * a reader from the end.
   */
  broadcast?: boolean;
  /**
   * With handleBatch: how long a fetch may wait for a fuller batch (Kafka's fetch wait, with a 1 MB
   * minimum). Fewer, larger batches at low load for this much more latency: hundreds of ms off the
   * delivery path (attempts), a few ms on it (the router). Only while records come: after an empty
   * fetch the next one long-polls (kafkajs/fetch-wait.ts), so an idle consumer does not ask the
   * broker every few ms; and not after handling the last batch took this long (at full speed).
   */
  batchWaitMs?: number;
  /**
   * Bytes one fetch may bring back, from one partition or several (default: kafkajs's 10 MiB a
   * fetch and 1 MiB a partition). A handleBatch consumer decodes every record of a fetch at once, so
   * while it is behind this is what it holds. One partition may fill the whole fetch: a smaller
   * share would cap what one busy partition (one tenant's events, one destination's attempts) is
   * read at, a share a round trip, whatever the consumer could do (an eighth held the attempts
   * service to ~1,460 attempts/s of one destination; docs/performance.md, "Fetch limits per consumer"). kafkajs
   * shuffles the partitions of each fetch request, so none is starved. The embedded bus has no fetch
   * and reads at most 1,000 records or 1 MiB of a partition at a time whatever this says.
   */
  fetchMaxBytes?: number;
}

export interface DelayedConsumeOptions<T> {
  groupId: string;
  topics: TopicDef[];
  /**
   * How long a record of this topic waits after it was written before it is handled; up to a tenth
   * more (at most 1 s), so that records due close together are released together.
   */
  delayMs(topic: TopicDef): number;
  handle(record: InRecord<T>): Promise<void>;
}

export interface BusConsumer {
  close(): Promise<void>;
}

/** A consumer of records one at a time (`handle`), which knows which keys it diverts. */
export interface KeyedConsumer extends BusConsumer {
  /**
   * How long dispatch key `key` (ConsumeOptions.dispatchKey; else the record key) has been stalled
   * when a record of it arriving now would go to `onKeyBacklog` rather than `handle`; 0 otherwise,
   * and for keys of partitions another instance consumes.
   */
  divertsNow(key: string): number;
}

export interface Bus {
  ensureTopics(topics?: TopicDef[]): Promise<void>;
  producer(): Promise<BusProducer>;
  consume<T>(options: ConsumeOptions<T>): Promise<KeyedConsumer>;
  /**
   * Consumes topics whose records must wait: a partition whose head is not due yet is paused and
   * resumed when it is, plus releaseSlackMs (each topic has one delay, so its partitions are in due
   * order).
   */
  consumeDelayed<T>(options: DelayedConsumeOptions<T>): Promise<BusConsumer>;
  /** Records each group has not committed yet, per partition (metrics; shared/src/metrics.ts). */
  lag?(groups: Array<{ groupId: string; topics: TopicDef[] }>): Promise<LagRow[]>;
  /** Resolves when the log answers (readiness); rejects when it cannot be reached. */
  ping?(): Promise<void>;
  close(): Promise<void>;
}

/** One partition's consumer lag: the log's end minus the group's committed offset (its start if none). */
export interface LagRow {
  groupId: string;
  /** The catalogue name (without the deployment prefix). */
  topic: string;
  partition: number;
  lag: number;
}
