// Produce requests written in one pass by shared/src/kafka/kafkajs/produce.ts: byte for byte what
// kafkajs's own module writes, installed in its place by the Kafka module, and read back intact
// from the real broker (which checks each batch's CRC and parses every record).
import { randomBytes, randomInt } from 'node:crypto';
import { createRequire } from 'node:module';
import kafkajs from 'kafkajs';
import t from 'tap';
import '../src/kafka/index.ts';
import { KAFKAJS_PRODUCE_MODULE, kafkajsProduce, type ProduceRequest, produceRequest } from '../src/kafka/kafkajs/produce.ts';
import { encodeProduce, type ProduceArgs } from '../src/kafka/kafkajs/produce-writer.ts';
import { createTopicReady, uniqueName } from '../src/testing/index.ts';

const require = createRequire(import.meta.url);
const Long = require('kafkajs/src/utils/long.js') as { fromInt(v: number): unknown };

/** What a request's encode() gives, as the bytes the network layer sends. */
async function bytesOf(r: ProduceRequest): Promise<Buffer> {
  return ((await r.encode()) as unknown as { buffer: Buffer }).buffer;
}

/** Runs `fn` with Date.now() pinned, so both encoders stamp the same batch timestamps. */
async function pinned<T>(now: number, fn: () => Promise<T>): Promise<T> {
  const real = Date.now;
  Date.now = () => now;
  try {
    return await fn();
  } finally {
    Date.now = real;
  }
}

/** Whether `r` encodes through this module (kafkajs's own requests carry its closure). */
const encodesHere = (r: ProduceRequest) => r.encode.toString() === produceRequest(SMALL).encode.toString();
const SMALL: ProduceArgs = {
  acks: -1,
  timeout: 1000,
  topicData: [{ topic: 'a', partitions: [{ partition: 0, messages: [{ key: 'k', value: 'v' }] }] }],
};

/** kafkajs's own bytes for `args`, with Date.now() pinned (each partition's batch carries it). */
const kafkajsBytes = (args: ProduceArgs, now: number) => pinned(now, () => bytesOf(kafkajsProduce(args)));

const pick = <T>(xs: readonly T[]): T => xs[randomInt(xs.length)] as T;
const text = (n: number) => Array.from({ length: n }, () => pick(['a', 'z', '0', ' ', '"', 'é', 'ß', '€', '😀', '\u0000'])).join('');
const bytes = (): string | Buffer | null | undefined =>
  pick([
    () => text(randomInt(0, 40)),
    () => randomBytes(randomInt(0, 300)),
    () => null,
    () => undefined,
    () => text(randomInt(100, 3000)),
  ])();
const headerValue = () => (randomInt(2) ? text(randomInt(0, 20)) : randomBytes(randomInt(0, 20)));

function randomArgs(): ProduceArgs {
  const transactional = randomInt(4) === 0;
  return {
    acks: pick([-1, 0, 1]),
    timeout: randomInt(1, 60_000),
    ...(transactional
      ? {
          transactionalId: text(randomInt(0, 12)),
          producerId: Long.fromInt(randomInt(1, 2 ** 31 - 1)),
          producerEpoch: randomInt(0, 30_000),
        }
      : {}),
    compression: pick([undefined, 0]),
    topicData: Array.from({ length: randomInt(1, 4) }, () => ({
      topic: `t.${text(randomInt(1, 10))}`,
      partitions: Array.from({ length: randomInt(1, 5) }, (_, p) => ({
        partition: p * 3 + randomInt(3),
        ...(randomInt(3) === 0 ? { firstSequence: randomInt(0, 2 ** 31 - 1) } : {}),
        // Up to 200 records so offsetDelta needs two varint bytes.
        messages: Array.from({ length: pick([0, 1, 2, 7, 200]) }, () => {
          const headers = randomInt(3)
            ? Object.fromEntries(
                Array.from({ length: randomInt(0, 4) }, (_, i) => [
                  `h${i}${text(randomInt(0, 4))}`,
                  randomInt(4) ? headerValue() : [headerValue(), headerValue()],
                ]),
              )
            : undefined;
          return { key: bytes(), value: bytes(), ...(headers ? { headers } : {}) };
        }),
      })),
    })),
  };
}

t.test('the bytes are those kafkajs writes, for any request of the shape the services send', async (t) => {
  const now = Date.now();
  let mismatches = 0;
  for (let i = 0; i < 300; i++) {
    const args = randomArgs();
    const ours = encodeProduce(args, () => now);
    if (!ours?.equals(await kafkajsBytes(args, now))) mismatches++;
  }
  t.equal(mismatches, 0, 'none of 300 random requests differs');
  t.same(
    [...(encodeProduce(SMALL, () => 1_700_000_000_123) ?? [])],
    [...(await kafkajsBytes(SMALL, 1_700_000_000_123))],
    'one small record',
  );
});

t.test('the request object matches kafkajs’s, and its encode() returns a kafkajs Encoder', async (t) => {
  const Encoder = require('kafkajs/src/protocol/encoder.js') as new () => object;
  for (const acks of [-1, 0, 1]) {
    const args: ProduceArgs = {
      acks,
      timeout: 5000,
      topicData: [{ topic: 'x', partitions: [{ partition: 1, messages: [{ key: 'k', value: 'v', headers: { a: 'b' } }] }] }],
    };
    const ours = produceRequest(args);
    const theirs = kafkajsProduce(args);
    t.ok(encodesHere(ours) && !encodesHere(theirs));
    t.same(
      { apiKey: ours.apiKey, apiVersion: ours.apiVersion, apiName: ours.apiName, expects: ours.expectResponse() },
      { apiKey: theirs.apiKey, apiVersion: theirs.apiVersion, apiName: theirs.apiName, expects: theirs.expectResponse() },
      `acks ${acks}`,
    );
    const enc = (await pinned(1_700_000_000_000, () => ours.encode())) as unknown as { size(): number; buffer: Buffer };
    t.ok(enc instanceof Encoder, 'an Encoder, so writeEncoder() takes it');
    t.equal(enc.size(), enc.buffer.length);
    t.ok(enc.buffer.equals(await pinned(1_700_000_000_000, () => bytesOf(theirs))), 'kafkajs’s bytes');
  }
});

t.test('requests of any other shape go to kafkajs’s own encoder', async (t) => {
  const one = (message: Record<string, unknown>, compression?: number): ProduceArgs => ({
    ...SMALL,
    ...(compression === undefined ? {} : { compression }),
    topicData: [{ topic: 'a', partitions: [{ partition: 0, messages: [message] }] }],
  });
  for (const [name, args] of [
    ['compressed', one({ key: 'k', value: 'v' }, 1)],
    ['a message timestamp', one({ key: 'k', value: 'v', timestamp: '1700000000000' })],
    ['a Uint8Array value', one({ key: 'k', value: new Uint8Array([1, 2]) })],
  ] as const) {
    const ours = produceRequest(args);
    t.equal(encodeProduce(args), null, `${name}: not a shape this writer reproduces`);
    t.notOk(encodesHere(ours), `${name}: kafkajs's request`);
    const [a, b] = await pinned(1_700_000_000_000, async () => [await bytesOf(ours), await bytesOf(kafkajsProduce(args))]);
    t.ok(a.equals(b), `${name}: kafkajs's bytes`);
  }
  await t.rejects(produceRequest(one({ key: 'k', value: 42 })).encode(), TypeError, 'a number value: kafkajs’s own error');
  await t.rejects(produceRequest(one({ key: 'k', value: 'v', headers: null })).encode(), TypeError, 'null headers: kafkajs’s own error');
});

t.test('the Kafka module puts it in place of kafkajs’s v3 module, which v4-v7 wrap', async (t) => {
  t.equal(require(KAFKAJS_PRODUCE_MODULE), produceRequest);
  for (const v of [4, 5, 6, 7]) {
    const build = require(`kafkajs/src/protocol/requests/produce/v${v}/request.js`) as (a: ProduceArgs) => ProduceRequest;
    const r = build(SMALL);
    t.equal(r.apiVersion, v);
    t.ok(encodesHere(r), `v${v} encodes through this module`);
  }
});

t.test('records written this way are read back intact from the broker', async (t) => {
  const kafka = new kafkajs.Kafka({
    brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'],
    clientId: 'produce-test',
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const topic = uniqueName('produce');
  await createTopicReady(admin, topic, 3);
  t.teardown(() => admin.deleteTopics({ topics: [topic] }).catch(() => {}));

  const sent = Array.from({ length: 500 }, (_, i) => ({
    key: i % 5 === 0 ? null : `k${i % 11}-é😀`,
    value: i % 7 === 0 ? randomBytes(randomInt(0, 5000)) : `v${i}:${text(randomInt(0, 200))}`,
    headers: i % 3 === 0 ? {} : { 'x-a': `ä${i}`, 'x-b': [Buffer.from([i & 0xff, 0]), 'second'] },
    partition: i % 3,
  }));
  const producer = kafka.producer();
  await producer.connect();
  t.teardown(() => producer.disconnect());
  // Two requests, so batches of several partitions and sizes go through the writer.
  await producer.send({ topic, acks: -1, messages: sent.slice(0, 250) });
  await producer.send({ topic, acks: -1, messages: sent.slice(250) });

  const got: Array<{ key: Buffer | null; value: Buffer | null; headers: Record<string, unknown>; partition: number }> = [];
  const consumer = kafka.consumer({ groupId: uniqueName('produce-read') });
  await consumer.connect();
  t.teardown(() => consumer.disconnect());
  await consumer.subscribe({ topic, fromBeginning: true });
  const done = new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message, partition }) => {
        got.push({ key: message.key, value: message.value, headers: message.headers ?? {}, partition });
        if (got.length === sent.length) resolve();
      },
    });
  });
  await Promise.race([
    done,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`read ${got.length} of ${sent.length}`)), 30_000)),
  ]);

  const asSent = (m: (typeof sent)[number]) => ({
    key: m.key,
    value: Buffer.isBuffer(m.value) ? m.value.toString('hex') : m.value,
    headers: Object.entries(m.headers).map(([k, v]) => [k, (Array.isArray(v) ? v : [v]).map((x) => Buffer.from(x).toString('hex'))]),
    partition: m.partition,
  });
  const asRead = (m: (typeof got)[number], like: (typeof sent)[number]) => ({
    key: m.key === null ? null : m.key.toString(),
    value: Buffer.isBuffer(like.value) ? (m.value ?? Buffer.alloc(0)).toString('hex') : (m.value?.toString() ?? null),
    headers: Object.entries(m.headers).map(([k, v]) => [
      k,
      (Array.isArray(v) ? v : [v]).map((x) => Buffer.from(x as Buffer).toString('hex')),
    ]),
    partition: m.partition,
  });
  // Each partition keeps its order; compare partition by partition.
  for (const p of [0, 1, 2]) {
    const want = sent.filter((m) => m.partition === p);
    const have = got.filter((m) => m.partition === p);
    t.same(
      have.map((m, i) => asRead(m, want[i] as (typeof sent)[number])),
      want.map(asSent),
      `partition ${p}: ${want.length} records, keys, values and headers as sent`,
    );
  }
});
