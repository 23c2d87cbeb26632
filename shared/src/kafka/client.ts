// What the Kafka bus's modules share: the kafkajs client and its settings, the admin connection kept
// for lag and readiness, the start-up retry, and the consumers and producers to close.
// createContext (index.ts) makes one per bus; producer.ts, consumer.ts, delayed.ts and admin.ts
// take it.
import kafkajs, { type Admin, type Kafka, type KafkaConfig } from 'kafkajs';
import type { BusConsumer, BusProducer, InRecord } from '../bus/index.ts';
import { retryInPlace } from '../bus/inflight.ts';
import { decodeRecord } from '../bus/record-codec.ts';
import { type TopicDef, topicName } from '../bus/topics.ts';
import type { Logger } from '../log.ts';

const { Kafka: KafkaClient, logLevel } = kafkajs;

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

/** Kafka's record batch limit for the topics we create (its own default, 1 MiB, is below our largest records). */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** Where a broadcast reader of this process is, for its lag: it commits no offsets to read. */
export interface BroadcastReader {
  /** The log's end per partition (`topic\u0000partition`) when it last joined its group. */
  from: Map<string, number>;
  /** The offset after its last handled record of the partition (with none in flight), or null before any. */
  handled(topic: string, partition: number): number | null;
}

/** One Kafka bus's shared state. */
export interface KafkaContext {
  opts: KafkaBusOptions;
  kafka: Kafka;
  /** A catalogue topic's name with the deployment prefix. */
  name(t: TopicDef): string;
  maxMessageBytes: number;
  // Consumers close before producers: in-flight work still writes its results while finishing.
  consumers: BusConsumer[];
  producers: BusProducer[];
  // Broadcast readers by group (as the services name it): they commit nothing, so their lag is
  // read from where each one is in this process, not from the broker's committed offsets.
  broadcastReaders: Map<string, Set<BroadcastReader>>;
  /** For lag and readiness: one connection kept, without kafkajs's retries (a probe wants an answer now). */
  adminOnce(): Promise<Admin>;
  /** The kept admin connection, if one was made (closed with the bus). */
  keptAdmin(): Promise<Admin> | null;
  /** Runs a start-up step again while Kafka answers a retriable error (see atStart). */
  atStart(what: string, step: () => Promise<void>): Promise<void>;
}

/** How long a kafkajs message is held back after it was logged; its repeats are counted meanwhile. */
export const KAFKA_LOG_REPEAT_MS = 30_000;
/** Distinct messages remembered for that (more at once: forgotten, and logged again). */
const KAFKA_LOG_REMEMBERED = 1_000;

interface KafkaLogEntry {
  level: number;
  label: string;
  log: { message: string } & Record<string, unknown>;
}

/**
 * kafkajs warnings about what the bus does on purpose, at debug rather than on every start: its
 * idempotent producers limit their retries, and one whose send failed is retired (producer.ts), so
 * no sequence number is reused.
 */
const DELIBERATE = new Set(['Limiting retries for the idempotent producer may invalidate EoS guarantees']);

/**
 * What one request met: a broker's answer naming an error (`Response Metadata(...)`: "This server
 * does not host this topic-partition") or a connection that failed. kafkajs logs them at ERROR, and
 * then retries the request or fails its caller, who says so.
 */
const REQUEST_LEVEL = /^(Response |Connection error)/;

/**
 * kafkajs's log lines, on the service's logger. kafkajs logs every retry of a step at ERROR: on a
 * fresh broker a start logged 22 lines of "the group coordinator is not available", and a broker
 * nobody answers 18 before the one line saying so. So a message (its text, error and broker) is
 * logged once per KAFKA_LOG_REPEAT_MS, its next line saying how often it repeated (`repeated`);
 * and a step kafkajs retries (its line counts the retries) or what one request met is a warning:
 * if kafkajs gives up, the caller's error says so.
 */
export function kafkaLogCreator(log: Logger, now: () => number = Date.now) {
  return () => {
    const recent = new Map<string, { until: number; repeats: number }>();
    return ({ level, label, log: entry }: KafkaLogEntry) => {
      const { message, timestamp: _, ...rest } = entry;
      const key = `${level} ${message} ${String(rest.error ?? '')} ${String(rest.broker ?? '')}`;
      const seen = recent.get(key);
      const t = now();
      if (seen && t < seen.until) {
        seen.repeats++;
        return;
      }
      if (recent.size >= KAFKA_LOG_REMEMBERED) recent.clear();
      recent.set(key, { until: t + KAFKA_LOG_REPEAT_MS, repeats: 0 });
      const fields = { kafka: rest, label, ...(seen?.repeats ? { repeated: seen.repeats } : {}) };
      if (DELIBERATE.has(message)) log.debug(fields, message);
      else if (level <= logLevel.ERROR && !('retryCount' in rest) && !REQUEST_LEVEL.test(message)) log.error(fields, message);
      else if (level <= logLevel.WARN) log.warn(fields, message);
      else log.debug(fields, message);
    };
  };
}

export function createContext(opts: KafkaBusOptions): KafkaContext {
  const kafka = new KafkaClient({
    clientId: opts.clientId,
    brokers: [...opts.brokers],
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(opts.log),
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5000 },
    ...opts.kafkajs,
  });
  let admin: Promise<Admin> | null = null;
  return {
    opts,
    kafka,
    name: (t) => topicName(opts.topicPrefix, t),
    maxMessageBytes: opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    consumers: [],
    producers: [],
    broadcastReaders: new Map(),
    adminOnce() {
      admin ??= (async () => {
        const a = kafka.admin({ retry: { retries: 0 } });
        await a.connect();
        return a;
      })().catch((err: unknown) => {
        admin = null;
        throw err;
      });
      return admin;
    },
    keptAdmin: () => admin,
    atStart: (what, step) => atStart(opts.log, what, step),
  };
}

/**
 * Runs a start-up step again while Kafka answers a retriable error, for up to a minute. Services
 * start together and create the same topics: right after a creation a broker may still answer
 * UNKNOWN_TOPIC_OR_PARTITION to kafkajs' leader check and to the metadata request of a subscribe,
 * neither of which kafkajs retries.
 */
async function atStart(log: Logger, what: string, step: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last: unknown;
  const done = await retryInPlace(step, {
    stopped: () => Date.now() > deadline,
    wait: (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 5_000))),
    failed(err, attempt) {
      last = err;
      if (!(err as { retriable?: boolean }).retriable) throw err;
      log.warn({ err, attempt }, `${what} failed; will retry`);
    },
  });
  if (!done) throw last;
}

/** A fetched kafkajs message as the Bus port hands it over. */
export function toInRecord<T>(
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
