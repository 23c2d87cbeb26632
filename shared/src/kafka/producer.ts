// The Kafka bus's producer: idempotent, acks=all, one request at a time, and retired after a failed
// send (see createProducer), with writes split to stay under max.message.bytes.
import kafkajs, { type Producer } from 'kafkajs';
import { createSerial } from '../batcher.ts';
import type { BusProducer, TopicRecords } from '../bus/index.ts';
import { jsonOf } from '../bus/record-codec.ts';
import type { KafkaContext } from './client.ts';
import { acknowledged, withheld } from './kafkajs/acked.ts';
import { createPartitioner } from './partitioner.ts';

const { CompressionTypes } = kafkajs;

/** How many times a write is sent while kafkajs resolves it with records no broker acknowledged. */
const UNSENT_ROUNDS = 5;

/** The records of a write that no broker acknowledged, by topic (kafkajs/acked.ts). */
function unacknowledged<M extends object>(topicMessages: Array<{ topic: string; messages: M[] }>): Array<{ topic: string; messages: M[] }> {
  return topicMessages.flatMap(({ topic, messages }) => {
    const left = messages.filter((m) => !acknowledged(m));
    return left.length ? [{ topic, messages: left }] : [];
  });
}

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

/**
 * A write's records as kafkajs messages, serialised as the requests fill, so a large write (a
 * fan-out of big events) holds one request's bytes at a time. A Buffer is sent as is (dead letters
 * keep the original bytes), JsonText as written, anything else as JSON.
 */
function* messagesOf(ctx: KafkaContext, batches: TopicRecords[]) {
  for (const b of batches) {
    for (const r of b.records) {
      const value = Buffer.isBuffer(r.value) ? r.value : jsonOf(r.value);
      yield { topic: ctx.name(b.topic), message: { key: r.key, value, headers: r.headers ?? {} } };
    }
  }
}

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
export async function createProducer(ctx: KafkaContext): Promise<BusProducer> {
  const open = async (): Promise<Producer> => {
    const p = ctx.kafka.producer({ idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false, createPartitioner });
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
      // Kafka refuses a partition's record batch over max.message.bytes, and kafkajs writes all of
      // a request's records for one partition as one batch: requests stay under the limit in all,
      // in order (a record over it on its own goes alone, and the broker says why).
      for (const request of splitBySize(messagesOf(ctx, batches), ctx.maxMessageBytes * 0.9)) {
        const topicMessages = [...Map.groupBy(request, (m) => m.topic)].map(([topic, list]) => ({
          topic,
          messages: list.map((m) => m.message),
        }));
        // Only the request waits its turn: other sends serialise their records meanwhile.
        await oneAtATime(async () => {
          let left = topicMessages;
          for (let round = 1; ; round++) {
            if (closed) throw new Error('the producer is closed');
            current ??= await open();
            const producer = current;
            try {
              await producer.sendBatch({ topicMessages: left, acks: -1, compression: CompressionTypes.None });
            } catch (err) {
              current = null;
              producer.disconnect().catch(() => undefined);
              ctx.opts.log.warn({ err }, 'a Kafka write failed; the next one starts a new producer');
              throw err;
            }
            // kafkajs may resolve a send across a leader change without having sent the records of
            // the partitions that moved (kafkajs/acked.ts): those go again, with a new producer, as
            // the old one's sequence numbers for those partitions may no longer be the broker's.
            // Nor are they when a retry left out records a broker had already written.
            const sent = left;
            left = unacknowledged(sent);
            if (left.length || sent.some((t) => t.messages.some(withheld))) {
              current = null;
              producer.disconnect().catch(() => undefined);
            }
            if (!left.length) return;
            const records = left.reduce((a, t) => a + t.messages.length, 0);
            if (round >= UNSENT_ROUNDS)
              throw new Error(`${records} record(s) of a Kafka write were acknowledged by no broker after ${round} sends`);
            ctx.opts.log.warn({ records, round }, 'a Kafka write left records no broker acknowledged; sending them again');
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
  ctx.producers.push(handle);
  return handle;
}
