// The only module that imports kafkajs (besides kafkajs-idle-poll.ts, kafkajs-crc32c.ts,
// kafkajs-produce.ts and kafkajs-fetch-wait.ts: a fix to its internals, a faster CRC, a one-pass
// produce request writer and fetch waits that follow the traffic, which load with it). The Kafka
// adapter of the Bus port (../bus.ts), which the embedded log (../embedded/bus.ts) implements too, so
// service code is the same in both modes.
import { randomUUID } from 'node:crypto';
import kafkajs, { type Admin, type Consumer, type ConsumerRunConfig, type KafkaConfig, type Producer } from 'kafkajs';
import './kafkajs-crc32c.ts';
import { adaptFetchWait, IDLE_FETCH_WAIT_MS } from './kafkajs-fetch-wait.ts';
import './kafkajs-idle-poll.ts';
import './kafkajs-produce.ts';
import type {
  Bus,
  BusConsumer,
  BusProducer,
  ConsumeOptions,
  DelayedConsumeOptions,
  InRecord,
  KeyedConsumer,
  LagRow,
} from '../bus/index.ts';
import { createSerial } from '../batcher.ts';
import type { Logger } from '../log.ts';
import { coalesceBatches } from '../bus/coalesce.ts';
import {
  createCommitter,
  DELAYED_RELEASE_SLICE,
  keyedDispatchOf,
  MERGED_BATCH_MAX_RECORDS,
  releaseSlackMs,
  releaseSlice,
} from '../bus/consume.ts';
import { decodeRecord, jsonOf } from '../bus/record-codec.ts';
import { createPartitioner } from './partitioner.ts';
import { OffsetTracker, retryInPlace } from '../bus/inflight.ts';
import { allTopics, type TopicDef, topicName } from '../bus/topics.ts';

const { Kafka, logLevel, CompressionTypes, ConfigResourceTypes } = kafkajs;

/** Where a broadcast reader of this process is, for its lag: it commits no offsets to read. */
interface BroadcastReader {
  /** The log's end per partition (`topic\u0000partition`) when it last joined its group. */
  from: Map<string, number>;
  /** The offset after its last handled record of the partition (with none in flight), or null before any. */
  handled(topic: string, partition: number): number | null;
}

/**
 * The next offset a broadcast reader is to handle: after its last handled record, at least where it
 * (re)started. A partition whose start is unknown (not read yet, or the log's end could not be read
 * as it joined) starts at `high`, the end seen now.
 */
function broadcastPosition(r: BroadcastReader, topic: string, partition: number, high: number): number {
  const id = `${topic}\u0000${partition}`;
  if (!r.from.has(id)) r.from.set(id, high);
  return Math.max(r.from.get(id) as number, r.handled(topic, partition) ?? 0);
}

interface PartitionState {
  topic: string;
  partition: number;
  tracker: OffsetTracker;
  committed: string | null;
  waiters: Array<() => void>;
}

export interface KafkaBusOptions {
  brokers: readonly string[];
  clientId: string;
  topicPrefix: string;
  partitions: number;
  replicationFactor: number;
  /**
   * `min.insync.replicas` of the topics created here (unset: the broker's default). With acks=all a
   * write is acknowledged once that many replicas have it; with fewer in sync the broker refuses it.
   */
  minInsyncReplicas?: number;
  /**
   * `max.message.bytes` of the topics created here, and the most bytes a produce request carries
   * (larger writes are split). Kafka's own default (1 MiB) is below our largest records: an event
   * can be 1 MiB, and a delivery record is the event plus its destination.
   */
  maxMessageBytes?: number;
  log: Logger;
  /** kafkajs client settings over ours; tests break connections with a `socketFactory` and shorten `retry`. */
  kafkajs?: Partial<KafkaConfig>;
}

function kafkaLogCreator(log: Logger) {
  return () =>
    ({ level, label, log: entry }: { level: number; label: string; log: { message: string } & Record<string, unknown> }) => {
      const { message, ...rest } = entry;
      const fields = { kafka: rest, label };
      if (level <= logLevel.ERROR) log.error(fields, message);
      else if (level === logLevel.WARN) log.warn(fields, message);
      else log.debug(fields, message);
    };
}

function toInRecord<T>(
  topic: string,
  partition: number,
  m: { offset: string; key: Buffer | null; value: Buffer | null; headers?: Record<string, unknown>; timestamp: string },
  keepRaw = false,
): InRecord<T> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = String(v);
  return decodeRecord(
    { topic, partition, offset: m.offset, key: m.key?.toString() ?? '', headers, timestamp: Number(m.timestamp) },
    m.value,
    keepRaw,
  );
}

/**
 * Consumer group session: how long the broker waits for a heartbeat before it gives a silent
 * member's partitions to the others (every consumer heartbeats at least once a second). 10 s rather
 * than the 45 s it was: after a SIGKILL the partitions were idle that long (docs/performance.md).
 */
export const SESSION_TIMEOUT_MS = 10_000;

/** How long `consume` waits for its first partitions before it goes on anyway (and says so). */
const JOIN_WAIT_MS = 30_000;

/** Resolves at the consumer's first group join, or after JOIN_WAIT_MS with a warning. */
function firstJoin(consumer: Consumer, log: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      log.warn({ wait_ms: JOIN_WAIT_MS }, 'no partitions assigned yet; going on');
      resolve();
    }, JOIN_WAIT_MS);
    timer.unref();
    const off = consumer.on(consumer.events.GROUP_JOIN, () => {
      clearTimeout(timer);
      off();
      resolve();
    });
  });
}

/**
 * Runs a kafkajs consumer, and runs it again whenever kafkajs gives up on it. kafkajs restarts a
 * crashed consumer only after an error it counts as retriable, and some errors that pass once the
 * broker is back are not: with the broker restarting, `KafkaJSGroupCoordinatorNotFound` ("Failed to
 * find group coordinator") stopped the attempts consumer of one run and the retry scheduler of
 * another for good, while their processes looked healthy (test/faults/kafka.test.ts). So a crash
 * kafkajs will not restart is restarted here, after 1 s, doubling to 30 s while starting fails;
 * offsets trail the work, so the restarted consumer resumes where its group committed, as after a
 * rebalance. Returns a function that stops the restarts (called before the consumer is closed).
 */
export async function runKept(consumer: Consumer, config: ConsumerRunConfig, log: Logger): Promise<() => void> {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let delay = RESTART_MIN_MS;
  const again = async () => {
    timer = null;
    if (stopped) return;
    try {
      await consumer.connect();
      await consumer.run(config);
    } catch (err) {
      // Refused before kafkajs took it over (no CRASH follows): try again later.
      log.warn({ err, retry_in_ms: delay }, 'restarting the consumer failed; will retry');
      schedule();
    }
  };
  const schedule = () => {
    if (stopped || timer) return;
    timer = setTimeout(() => void again(), delay);
    delay = Math.min(delay * 2, RESTART_MAX_MS);
  };
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (payload.restart || stopped) return;
    log.error({ err: payload.error, retry_in_ms: delay }, 'kafkajs stopped the consumer; starting it again');
    schedule();
  });
  consumer.on(consumer.events.GROUP_JOIN, () => {
    delay = RESTART_MIN_MS;
  });
  await consumer.run(config);
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
const RESTART_MIN_MS = 1_000;
const RESTART_MAX_MS = 30_000;

/** Kafka's record batch limit for the topics we create (its own default, 1 MiB, is below our largest records). */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/**
 * kafkajs's fetch limits for a delayed consumer (the retry tiers): 2 MiB a fetch, an eighth of it a
 * partition (kafkajs's defaults: 10 MiB and 1 MiB). A resumed tier needs only its records now due,
 * and the rest of a fetch is dropped at the next pause, so large fetches only held memory: in the
 * benchmark's hanging phase the sender's largest buffers in flight fell by 15 MB and its peak RSS by
 * 13-26 MB with these, at the same CPU and throughput (docs/performance.md, "Fetch limits per
 * consumer"). A record batch larger than either limit still comes back whole, alone (Kafka's fetch rules
 * since KIP-74).
 */
export const DELAYED_FETCH_LIMITS = { maxBytes: 2 * 1024 * 1024, maxBytesPerPartition: 256 * 1024 } as const;

/**
 * Longest a delayed consumer's fetch waits for data (kafkajs's default: 5 s). A resumed partition
 * joins only the next fetch, and kafkajs starts that one after the fetch in flight (a long poll of
 * the tiers' other partitions) has returned, or after sleeping this long when every partition is
 * paused; with the default, retries left their tier 2.5 s after they were due at the median and up
 * to 5 s (1 s tier: 0.11 s and 0.23 s with 200 ms; docs/performance.md, "Retry tiers wait at most
 * 200 ms a fetch"). Only while a partition is paused: with none there is nothing to resume, and the
 * fetch long-polls (kafkajs-fetch-wait.ts), so idle tiers are not asked five times a second.
 */
export const DELAYED_FETCH_MAX_WAIT_MS = 200;

/**
 * Consecutive groups of messages whose encoded size stays under `budget` (a larger one alone),
 * taken lazily: a write of any size holds one group at a time.
 */
export function* splitBySize<M extends { message: { key: string; value: string | Buffer; headers: Record<string, string> } }>(
  messages: Iterable<M>,
  budget: number,
): Generator<M[]> {
  let current: M[] = [];
  let size = 0;
  for (const m of messages) {
    // Value and key bytes plus a generous per-record overhead (lengths, offsets, headers).
    let bytes = Buffer.byteLength(m.message.value) + Buffer.byteLength(m.message.key) + 64;
    for (const [k, v] of Object.entries(m.message.headers)) bytes += k.length + Buffer.byteLength(v);
    if (current.length && size + bytes > budget) {
      yield current;
      current = [];
      size = 0;
    }
    current.push(m);
    size += bytes;
  }
  if (current.length) yield current;
}

/** Topics would be created with more replicas than the cluster has brokers: a setting to fix, not to retry. */
export class ReplicationError extends Error {
  readonly retriable = false;
  constructor(wanted: number, brokers: number) {
    super(
      `KAFKA_REPLICATION_FACTOR is ${wanted} but the cluster has ${brokers} broker(s): start the other brokers, or for a ` +
        'single development broker set KAFKA_REPLICATION_FACTOR=1 and KAFKA_MIN_INSYNC_REPLICAS=1 (docs/operations.md, "Production topology")',
    );
    this.name = 'ReplicationError';
  }
}

export function createKafkaBus(opts: KafkaBusOptions): Bus {
  if (opts.minInsyncReplicas && opts.minInsyncReplicas > opts.replicationFactor)
    throw new Error(
      `KAFKA_MIN_INSYNC_REPLICAS (${opts.minInsyncReplicas}) is above KAFKA_REPLICATION_FACTOR (${opts.replicationFactor}): no write could ever be accepted`,
    );
  const kafka = new Kafka({
    clientId: opts.clientId,
    brokers: [...opts.brokers],
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(opts.log),
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5000 },
    ...opts.kafkajs,
  });
  const name = (t: TopicDef) => topicName(opts.topicPrefix, t);
  const maxMessageBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;

  // Consumers close before producers: in-flight work still writes its results while finishing.
  const consumers: BusConsumer[] = [];
  // Broadcast readers by group (as the services name it): they commit nothing, so their lag is
  // read from where each one is in this process, not from the broker's committed offsets.
  const broadcastReaders = new Map<string, Set<BroadcastReader>>();
  const producers: BusProducer[] = [];
  // For lag and readiness: one connection kept, without kafkajs's retries (a probe wants an answer now).
  let admin: Promise<Admin> | null = null;
  const adminOnce = (): Promise<Admin> => {
    admin ??= (async () => {
      const a = kafka.admin({ retry: { retries: 0 } });
      await a.connect();
      return a;
    })().catch((err: unknown) => {
      admin = null;
      throw err;
    });
    return admin;
  };

  async function ensureOnce(topics: TopicDef[]): Promise<void> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const existing = new Set(await admin.listTopics());
      const missing = topics.filter((t) => !existing.has(name(t)));
      if (missing.length) {
        // Kafka's own answer (INVALID_REPLICATION_FACTOR) names neither the brokers nor the setting.
        const { brokers } = await admin.describeCluster();
        if (brokers.length < opts.replicationFactor) throw new ReplicationError(opts.replicationFactor, brokers.length);
        await admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((t) => ({
            topic: name(t),
            numPartitions: opts.partitions,
            replicationFactor: opts.replicationFactor,
            configEntries: [
              { name: 'max.message.bytes', value: String(maxMessageBytes) },
              ...(opts.minInsyncReplicas ? [{ name: 'min.insync.replicas', value: String(opts.minInsyncReplicas) }] : []),
              ...(t.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : []),
            ],
          })),
        });
      }
      // Topics made before (by an earlier version or by hand) keep their limit: say so at start,
      // rather than when the first large event is refused.
      const kept = topics.filter((t) => existing.has(name(t))).map(name);
      if (kept.length) {
        const { resources } = await admin.describeConfigs({
          includeSynonyms: false,
          resources: kept.map((topic) => ({
            type: ConfigResourceTypes.TOPIC,
            name: topic,
            configNames: ['max.message.bytes', 'min.insync.replicas'],
          })),
        });
        const configOf = (r: (typeof resources)[number], config: string) =>
          Number(r.configEntries.find((e) => e.configName === config)?.configValue);
        const small = resources.flatMap((r) => {
          const v = configOf(r, 'max.message.bytes');
          return v < maxMessageBytes ? [`${r.resourceName} (${v})`] : [];
        });
        if (small.length) {
          opts.log.warn(
            { topics: small, wanted: maxMessageBytes },
            'topics with max.message.bytes below KAFKA_MAX_MESSAGE_BYTES: events near 1 MiB will be refused until it is raised',
          );
        }
        const fewer = resources.flatMap((r) => {
          const v = configOf(r, 'min.insync.replicas');
          return opts.minInsyncReplicas && v < opts.minInsyncReplicas ? [`${r.resourceName} (${v})`] : [];
        });
        if (fewer.length) {
          opts.log.warn(
            { topics: fewer, wanted: opts.minInsyncReplicas },
            'topics with min.insync.replicas below KAFKA_MIN_INSYNC_REPLICAS: an accepted write may live on fewer brokers until it is raised',
          );
        }
      }
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * Runs a start-up step again while Kafka answers a retriable error, for up to a minute. Services
   * start together and create the same topics: right after a creation a broker may still answer
   * UNKNOWN_TOPIC_OR_PARTITION to kafkajs' leader check and to the metadata request of a subscribe,
   * neither of which kafkajs retries.
   */
  async function atStart(what: string, step: () => Promise<void>): Promise<void> {
    const deadline = Date.now() + 60_000;
    let last: unknown;
    const done = await retryInPlace(step, {
      stopped: () => Date.now() > deadline,
      wait: (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 5_000))),
      failed(err, attempt) {
        last = err;
        if (!(err as { retriable?: boolean }).retriable) throw err;
        opts.log.warn({ err, attempt }, `${what} failed; will retry`);
      },
    });
    if (!done) throw last;
  }

  return {
    async ensureTopics(topics = allTopics()) {
      await atStart('creating topics', () => ensureOnce(topics));
    },

    async producer() {
      // kafkajs's idempotent producer numbers each partition's record batches, and when a request
      // fails it gives the batch's sequence numbers back, for the next request to use. If the broker
      // had in fact written the failed batch (the connection broke before its answer came), the next
      // batch of as many records looks to the broker like a repeat of it: the broker answers with
      // the written batch's offsets and drops the new records, and the send succeeds. With a broker
      // restart that was a publish answered 202 and never delivered (test/faults/kafka.test.ts).
      // So a failed send retires its producer, and the next send starts a new one (a new producer
      // id, numbered from 0); and requests go one at a time, so none takes the numbers of another's
      // failed request before kafkajs retries it. kafkajs sends an idempotent producer's requests to a
      // broker one at a time anyway, and the services batch their writes (one request in flight, the
      // next one filling), so this costs no round trips.
      const open = async (): Promise<Producer> => {
        const p = kafka.producer({ idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false, createPartitioner });
        await p.connect().catch(async (err: unknown) => {
          await p.disconnect().catch(() => undefined);
          throw err;
        });
        return p;
      };
      let current: Producer | null = await open();
      let closed = false;
      const oneAtATime = createSerial();
      const handle: BusProducer = {
        send: (topic, records) => handle.sendMany([{ topic, records }]),
        async sendMany(batches) {
          // Serialised as the requests fill, so a large write (a fan-out of big events) holds one
          // request's bytes at a time. A Buffer is sent as is (dead letters keep the original bytes),
          // JsonText as written, anything else as JSON.
          const messages = function* () {
            for (const b of batches) {
              for (const r of b.records) {
                const value = Buffer.isBuffer(r.value) ? r.value : jsonOf(r.value);
                yield { topic: name(b.topic), message: { key: r.key, value, headers: r.headers ?? {} } };
              }
            }
          };
          // Kafka refuses a partition's record batch over max.message.bytes, and kafkajs writes all of
          // a request's records for one partition as one batch: requests stay under the limit in all,
          // in order (a record over it on its own goes alone, and the broker says why).
          for (const request of splitBySize(messages(), maxMessageBytes * 0.9)) {
            const topicMessages = [...Map.groupBy(request, (m) => m.topic)].map(([topic, list]) => ({
              topic,
              messages: list.map((m) => m.message),
            }));
            // Only the request waits its turn: other sends serialise their records meanwhile.
            await oneAtATime(async () => {
              if (closed) throw new Error('the producer is closed');
              current ??= await open();
              const producer = current;
              try {
                await producer.sendBatch({ topicMessages, acks: -1, compression: CompressionTypes.None });
              } catch (err) {
                current = null;
                producer.disconnect().catch(() => undefined);
                opts.log.warn({ err }, 'a Kafka write failed; the next one starts a new producer');
                throw err;
              }
            });
          }
        },
        close: () =>
          oneAtATime(async () => {
            closed = true;
            await current?.disconnect();
            current = null;
          }),
      };
      producers.push(handle);
      return handle;
    },

    async consume<T>(o: ConsumeOptions<T>) {
      const groupId = `${opts.topicPrefix}${o.groupId}${o.broadcast ? `.${randomUUID()}` : ''}`;
      // A fetch bounded below the wait's minimum would always wait it out, so half the bound at most.
      const minBytes = o.fetchMaxBytes ? Math.min(1_048_576, Math.floor(o.fetchMaxBytes / 2)) : 1_048_576;
      const consumer: Consumer = kafka.consumer({
        groupId,
        allowAutoTopicCreation: false,
        // The loop below heartbeats at least every second, also while it waits for a free slot, so
        // the session need not outlast an attempt. It decides how soon the partitions of an
        // instance that died (SIGKILL, a lost machine) go to the others, and how soon a restarted
        // one consumes again: with 45 s, a restart after SIGKILL waited about that long for its
        // partitions (docs/performance.md).
        sessionTimeout: SESSION_TIMEOUT_MS,
        rebalanceTimeout: 60_000,
        heartbeatInterval: 1_000,
        ...(o.batchWaitMs ? { minBytes, maxWaitTimeInMs: o.batchWaitMs } : {}),
        ...(o.fetchMaxBytes ? { maxBytes: o.fetchMaxBytes, maxBytesPerPartition: o.fetchMaxBytes } : {}),
      });
      // Waiting for fuller batches only while records come; idle, a long poll (kafkajs-fetch-wait.ts).
      const stopAdapting = o.batchWaitMs
        ? adaptFetchWait(groupId, { kind: 'batch', minBytes, maxWaitMs: o.batchWaitMs, idleWaitMs: IDLE_FETCH_WAIT_MS })
        : () => {};
      const log = opts.log.child({ group: o.groupId });
      const partitions = new Map<string, PartitionState>();
      const inflight = new Set<Promise<void>>();
      let closing = false;

      const stateOf = (topic: string, partition: number): PartitionState => {
        const id = `${topic}\u0000${partition}`;
        let st = partitions.get(id);
        if (!st) {
          st = { topic, partition, tracker: new OffsetTracker(), committed: null, waiters: [] };
          partitions.set(id, st);
        }
        return st;
      };

      // Commits run on a timer and at close, never per record: the committed offset only trails.
      const commit = createCommitter(
        () => partitions.values(),
        (due) => consumer.commitOffsets(due.map(({ st, offset }) => ({ topic: st.topic, partition: st.partition, offset }))),
        // A rebalance took the partition away; its new owner resumes from the last commit.
        (err) => log.debug({ err }, 'offset commit failed'),
      );
      const timer = setInterval(() => void (o.broadcast || commit()), o.commitIntervalMs ?? 500);
      timer.unref();

      const joined = firstJoin(consumer, log);
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        const assigned = payload.memberAssignment as Record<string, number[]>;
        for (const [id, st] of partitions) if (!assigned[st.topic]?.includes(st.partition)) partitions.delete(id);
      });

      // One handler call for the batches of several partitions fetched together (coalesce.ts).
      const handleBatch = o.handleBatch
        ? coalesceBatches(o.handleBatch.bind(o), MERGED_BATCH_MAX_RECORDS, (err, batches, records) =>
            log.warn({ err, batches, records }, 'merged batch failed; handling its batches one by one'),
          )
        : null;

      // Our own faults are retried here with backoff until they pass: the record stays unfinished,
      // so its offset is not committed and nothing behind it is lost.
      const dispatch = keyedDispatchOf(o, {
        untilDone: (what, record) =>
          retryInPlace(what, {
            stopped: () => closing,
            wait: (ms) => new Promise((r) => setTimeout(r, ms)),
            failed: (err, attempt) =>
              log.error(
                { err, topic: record.topic, partition: record.partition, offset: record.offset, attempt },
                'handler failed; will retry',
              ),
          }),
      });

      // A broadcast reader commits nothing: its lag is where it is here. At each join (the first, and
      // again after a rebalance or a restart) kafkajs starts it at the log's end, so records from
      // before are not its own: the end read then is where it starts.
      let reader: BroadcastReader | null = null;
      if (o.broadcast) {
        const r: BroadcastReader = {
          from: new Map(),
          handled(topic, partition) {
            const done = partitions.get(`${topic}\u0000${partition}`)?.tracker.committable();
            return done === null || done === undefined ? null : Number(done);
          },
        };
        consumer.on(consumer.events.GROUP_JOIN, () => {
          void (async () => {
            const from = new Map<string, number>();
            const a = await adminOnce();
            for (const t of o.topics)
              for (const e of await a.fetchTopicOffsets(name(t))) from.set(`${name(t)}\u0000${e.partition}`, Number(e.high));
            r.from = from;
          })().catch((err: unknown) => log.debug({ err }, 'reading the log end for lag failed; taken at the next scrape'));
        });
        reader = r;
        const set = broadcastReaders.get(o.groupId) ?? new Set();
        set.add(r);
        broadcastReaders.set(o.groupId, set);
      }

      await consumer.connect();
      for (const t of o.topics) {
        const fromBeginning = o.broadcast ? false : (o.fromBeginning ?? true);
        await atStart(`subscribing to ${name(t)}`, () => consumer.subscribe({ topic: name(t), fromBeginning }));
      }
      const run: ConsumerRunConfig = {
        autoCommit: false,
        eachBatchAutoResolve: false,
        // A partition waiting for free slots must not hold up the others.
        partitionsConsumedConcurrently: 16,
        eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
          const st = stateOf(batch.topic, batch.partition);
          if (handleBatch) {
            // Committed by the timer like single records (one commit request per interval, not per batch).
            const records = batch.messages
              .filter((m) => !st.tracker.seen(m.offset))
              .map((m) => toInRecord<T>(batch.topic, batch.partition, m, o.keepRaw));
            if (!records.length || closing) return;
            // Marked done only once written: a failed batch is fetched again and not skipped as seen.
            const task = handleBatch(records)
              .then(() => {
                for (const r of records) {
                  st.tracker.start(r.offset);
                  st.tracker.finish(r.offset);
                }
              })
              .finally(() => inflight.delete(task));
            inflight.add(task);
            await task;
            resolveOffset((records.at(-1) as InRecord<T>).offset);
            return;
          }
          for (const m of batch.messages) {
            if (closing || !isRunning() || isStale()) break;
            if (st.tracker.seen(m.offset)) {
              resolveOffset(m.offset);
              continue;
            }
            while (!dispatch.hasRoom(st) && !closing) {
              await new Promise<void>((r) => {
                void dispatch.roomFreed(st).then(r);
                setTimeout(r, 1000);
              });
              await heartbeat();
            }
            if (closing) break;
            resolveOffset(m.offset);
            await dispatch.run(toInRecord<T>(batch.topic, batch.partition, m, o.keepRaw), st, inflight, m.value?.length ?? 0);
          }
          await heartbeat();
        },
      };
      const stopRestarts = await runKept(consumer, run, log);

      // Ready (and the service says "consuming") once the group gave this instance its partitions.
      await joined;
      const handle: KeyedConsumer = {
        divertsNow: (key) => dispatch.divertsNow(key),
        async close() {
          if (closing) return;
          closing = true;
          stopRestarts();
          consumer.pause(o.topics.map((t) => ({ topic: name(t) })));
          await Promise.allSettled([...inflight]);
          clearInterval(timer);
          dispatch.close();
          if (!o.broadcast) await commit();
          if (reader) broadcastReaders.get(o.groupId)?.delete(reader);
          await consumer.disconnect();
          stopAdapting();
        },
      };
      consumers.push(handle);
      return handle;
    },

    async consumeDelayed<T>(o: DelayedConsumeOptions<T>) {
      const groupId = `${opts.topicPrefix}${o.groupId}`;
      // The short wait only while a partition is paused; with none, a long poll (kafkajs-fetch-wait.ts).
      const stopAdapting = adaptFetchWait(groupId, {
        kind: 'delayed',
        minBytes: 1,
        maxWaitMs: DELAYED_FETCH_MAX_WAIT_MS,
        idleWaitMs: IDLE_FETCH_WAIT_MS,
      });
      const consumer: Consumer = kafka.consumer({
        groupId,
        allowAutoTopicCreation: false,
        sessionTimeout: SESSION_TIMEOUT_MS,
        heartbeatInterval: 1_000,
        ...DELAYED_FETCH_LIMITS,
        maxWaitTimeInMs: DELAYED_FETCH_MAX_WAIT_MS,
      });
      const groupLog = opts.log.child({ group: o.groupId });
      const joined = firstJoin(consumer, groupLog);
      const delayOf = new Map(o.topics.map((t) => [name(t), o.delayMs(t)]));
      const timers = new Set<NodeJS.Timeout>();
      let closing = false;
      await consumer.connect();
      for (const t of o.topics)
        await atStart(`subscribing to ${name(t)}`, () => consumer.subscribe({ topic: name(t), fromBeginning: true }));
      const run: ConsumerRunConfig = {
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 16,
        eachBatch: async ({ batch, resolveOffset, heartbeat, pause, isRunning, isStale }) => {
          const delay = delayOf.get(batch.topic) ?? 0;
          const now = Date.now();
          const firstLater = batch.messages.findIndex((m) => Number(m.timestamp) + delay > now);
          const due = firstLater < 0 ? batch.messages : batch.messages.slice(0, firstLater);
          // Due records are released together, a slice at a time, with one commit per slice. A
          // failure is thrown after committing up to it: kafkajs fetches the batch again from there.
          for (let i = 0; i < due.length; i += DELAYED_RELEASE_SLICE) {
            if (closing || !isRunning() || isStale()) return;
            await releaseSlice(
              due.slice(i, i + DELAYED_RELEASE_SLICE),
              (m) => o.handle(toInRecord<T>(batch.topic, batch.partition, m)),
              async (last) => {
                resolveOffset(last.offset);
                await consumer.commitOffsets([
                  { topic: batch.topic, partition: batch.partition, offset: String(BigInt(last.offset) + 1n) },
                ]);
              },
            );
            await heartbeat();
          }
          const next = firstLater < 0 ? undefined : batch.messages[firstLater];
          if (next && !closing && isRunning() && !isStale()) {
            // Not due: stop here, come back to this very record when it is. The fetched batch is
            // dropped meanwhile (fetched again on resume), so a long tier holds no records in memory.
            const resume = pause();
            consumer.seek({ topic: batch.topic, partition: batch.partition, offset: next.offset });
            const timer = setTimeout(
              () => {
                timers.delete(timer);
                if (!closing) resume();
              },
              Number(next.timestamp) + delay + releaseSlackMs(delay) - Date.now(),
            );
            timers.add(timer);
          }
        },
      };
      const stopRestarts = await runKept(consumer, run, groupLog);
      await joined;
      const handle: BusConsumer = {
        async close() {
          closing = true;
          stopRestarts();
          for (const t of timers) clearTimeout(t);
          await consumer.disconnect();
          stopAdapting();
        },
      };
      consumers.push(handle);
      return handle;
    },

    async lag(groups) {
      const a = await adminOnce();
      // Every group and topic asked at once (a sender has a dozen groups): one round trip's wait,
      // not one per group, so a busy broker still answers within the scrape's bound.
      const ends = new Map<string, Promise<Array<{ partition: number; high: string; low: string }>>>();
      const endsOf = (topic: string) => {
        let end = ends.get(topic);
        if (!end) {
          end = a.fetchTopicOffsets(topic);
          ends.set(topic, end);
        }
        return end;
      };
      const perGroup = await Promise.all(
        groups.map(async ({ groupId, topics }): Promise<LagRow[]> => {
          const rows: LagRow[] = [];
          const readers = broadcastReaders.get(groupId);
          if (readers?.size) {
            // Per partition, the reader furthest behind: the log's end minus where it is (the offset
            // after its last handled record, or the end it started at).
            for (const def of topics) {
              for (const e of await endsOf(name(def))) {
                const high = Number(e.high);
                let lag = 0;
                for (const r of readers) lag = Math.max(lag, high - broadcastPosition(r, name(def), e.partition, high));
                rows.push({ groupId, topic: def.name, partition: e.partition, lag });
              }
            }
            return rows;
          }
          const committed = await a.fetchOffsets({ groupId: `${opts.topicPrefix}${groupId}`, topics: topics.map(name) });
          for (const t of committed) {
            const def = topics.find((d) => name(d) === t.topic);
            const end = await endsOf(t.topic);
            for (const p of t.partitions) {
              const e = end.find((x) => x.partition === p.partition);
              if (!e) continue;
              const from = Number(p.offset) >= 0 ? Number(p.offset) : Number(e.low);
              rows.push({ groupId, topic: def?.name ?? t.topic, partition: p.partition, lag: Math.max(0, Number(e.high) - from) });
            }
          }
          return rows;
        }),
      );
      return perGroup.flat();
    },

    async ping() {
      await (await adminOnce()).describeCluster();
    },

    async close() {
      await Promise.allSettled(consumers.splice(0).map((h) => h.close()));
      await Promise.allSettled(producers.splice(0).map((h) => h.close()));
      if (admin) await (await admin.catch(() => null))?.disconnect();
    },
  };
}
