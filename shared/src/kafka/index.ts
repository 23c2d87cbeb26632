// The only module that imports kafkajs. Services talk to Kafka through the narrow Bus interface,
// which the embedded mode implements too, so service code is the same in both modes.
import kafkajs, { type Consumer, type Producer } from 'kafkajs';
import type { Logger } from '../log.ts';
import { allTopics, type TopicDef, topicName } from './topics.ts';

const { Kafka, logLevel, CompressionTypes } = kafkajs;

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
}

export interface BusProducer {
  /** Resolves once every in-sync replica has the records (acks=all). */
  send(topic: TopicDef, records: OutRecord[]): Promise<void>;
  close(): Promise<void>;
}

export interface ConsumeOptions<T> {
  groupId: string;
  topics: TopicDef[];
  /** Our own faults throw (the record is redelivered); a destination's failure is data. */
  handle?(record: InRecord<T>): Promise<void>;
  /** Alternative to handle: one call per fetched batch (for batched writes). */
  handleBatch?(records: InRecord<T>[]): Promise<void>;
  fromBeginning?: boolean;
}

export interface BusConsumer {
  close(): Promise<void>;
}

export interface Bus {
  ensureTopics(topics?: TopicDef[]): Promise<void>;
  producer(): Promise<BusProducer>;
  consume<T>(options: ConsumeOptions<T>): Promise<BusConsumer>;
  close(): Promise<void>;
}

export interface KafkaBusOptions {
  brokers: readonly string[];
  clientId: string;
  topicPrefix: string;
  partitions: number;
  replicationFactor: number;
  log: Logger;
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
): InRecord<T> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = String(v);
  return {
    topic,
    partition,
    offset: m.offset,
    key: m.key?.toString() ?? '',
    value: JSON.parse(m.value?.toString() ?? 'null') as T,
    headers,
    timestamp: Number(m.timestamp),
  };
}

export function createKafkaBus(opts: KafkaBusOptions): Bus {
  const kafka = new Kafka({
    clientId: opts.clientId,
    brokers: [...opts.brokers],
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(opts.log),
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5000 },
  });
  const name = (t: TopicDef) => topicName(opts.topicPrefix, t);
  const open: Array<{ close(): Promise<void> }> = [];

  return {
    async ensureTopics(topics = allTopics()) {
      const admin = kafka.admin();
      await admin.connect();
      try {
        const existing = new Set(await admin.listTopics());
        const missing = topics.filter((t) => !existing.has(name(t)));
        if (missing.length) {
          await admin.createTopics({
            waitForLeaders: true,
            topics: missing.map((t) => ({
              topic: name(t),
              numPartitions: opts.partitions,
              replicationFactor: opts.replicationFactor,
              configEntries: t.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : [],
            })),
          });
        }
      } finally {
        await admin.disconnect();
      }
    },

    async producer() {
      const producer: Producer = kafka.producer({ idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false });
      await producer.connect();
      const handle: BusProducer = {
        async send(topic, records) {
          if (records.length === 0) return;
          await producer.send({
            topic: name(topic),
            acks: -1,
            compression: CompressionTypes.None,
            messages: records.map((r) => ({ key: r.key, value: JSON.stringify(r.value), headers: r.headers ?? {} })),
          });
        },
        close: () => producer.disconnect(),
      };
      open.push(handle);
      return handle;
    },

    async consume<T>(o: ConsumeOptions<T>) {
      const consumer: Consumer = kafka.consumer({
        groupId: `${opts.topicPrefix}${o.groupId}`,
        allowAutoTopicCreation: false,
        // A session must outlast the slowest handler between heartbeats.
        sessionTimeout: 45_000,
        heartbeatInterval: 3_000,
      });
      await consumer.connect();
      for (const t of o.topics) await consumer.subscribe({ topic: name(t), fromBeginning: o.fromBeginning ?? true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale }) => {
          const records = batch.messages.map((m) => toInRecord<T>(batch.topic, batch.partition, m));
          if (o.handleBatch) {
            await o.handleBatch(records);
            const last = records.at(-1);
            if (last) resolveOffset(last.offset);
          } else if (o.handle) {
            for (const r of records) {
              if (!isRunning() || isStale()) break;
              await o.handle(r);
              resolveOffset(r.offset);
              await heartbeat();
            }
          }
          // Offsets are committed only after the work is done: a crash redelivers, never loses.
          await commitOffsetsIfNecessary();
        },
      });
      const handle: BusConsumer = { close: () => consumer.disconnect() };
      open.push(handle);
      return handle;
    },

    async close() {
      await Promise.allSettled(open.splice(0).map((h) => h.close()));
    },
  };
}
