// The Kafka bus's delayed consumer (the retry tiers) against the real broker: records wait their
// delay, are released once each, commits survive a restart, and a failing handler loses nothing.
// Also the faults kafkajs handles badly on its own: a send after a failed one whose records the
// broker kept, and a consumer kafkajs stops for good.
import { connect } from 'node:net';
import kafkajs, { type ISocketFactory } from 'kafkajs';
import { pino } from 'pino';
import t from 'tap';
import { DELAYED_FETCH_MAX_WAIT_MS } from '../src/bus/consume.ts';
import type { Bus, InRecord } from '../src/bus/index.ts';
import { createKafkaBus, DEFAULT_MAX_MESSAGE_BYTES, DELAYED_FETCH_LIMITS, runKept, splitBySize } from '../src/kafka/index.ts';
import { partitionOfKey } from '../src/kafka/partitioner.ts';
import type { TopicDef } from '../src/bus/topics.ts';
import { createLogger } from '../src/log.ts';
import { createTopicReady, uniqueName, waitFor, waitForLeaders } from '../src/testing/index.ts';

const log = createLogger('test', 'silent');
const DELAY_MS = 1000;

function openBus(t: { teardown(fn: () => unknown): void }, prefix: string, maxMessageBytes?: number, partitions = 2): Bus {
  const bus = createKafkaBus({
    ...(maxMessageBytes ? { maxMessageBytes } : {}),
    brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'],
    clientId: 'kafka-bus-test',
    topicPrefix: prefix,
    partitions,
    replicationFactor: 1,
    log,
  });
  t.teardown(() => bus.close());
  return bus;
}

/** A bus with its own topic prefix, the topic created, and a producer. */
async function busWithTopic(t: { teardown(fn: () => unknown): void }, topic: TopicDef, maxMessageBytes?: number) {
  const bus = openBus(t, `${uniqueName('kb')}.`, maxMessageBytes);
  await bus.ensureTopics([topic]);
  return { bus, producer: await bus.producer() };
}

const TIER: TopicDef = { name: 'tier', key: 'k', description: 'a delay tier' };

t.test('delayed consumer: each record waits its delay, is released once, and the commit holds', async (t) => {
  const tier = TIER;
  const { bus, producer } = await busWithTopic(t, tier);
  const got: Array<{ r: InRecord<number>; at: number }> = [];
  const consumer = await bus.consumeDelayed<number>({
    groupId: 'later',
    topics: [tier],
    delayMs: () => DELAY_MS,
    handle: async (r) => void got.push({ r, at: Date.now() }),
  });
  // More than one release slice, in two waves so a later wave waits behind a due one.
  const n = 1200;
  await producer.send(
    tier,
    Array.from({ length: n / 2 }, (_, i) => ({ key: `k${i % 7}`, value: i })),
  );
  await new Promise((r) => setTimeout(r, 300));
  await producer.send(
    tier,
    Array.from({ length: n / 2 }, (_, i) => ({ key: `k${i % 7}`, value: n / 2 + i })),
  );
  await waitFor('every record released', () => got.length >= n, 30_000);
  const early = got.filter(({ r, at }) => at - r.timestamp < DELAY_MS);
  t.equal(early.length, 0, 'no record released before its delay');
  t.same(
    [...new Set(got.map((g) => g.r.value))].sort((a, b) => a - b),
    Array.from({ length: n }, (_, i) => i),
    'every record released',
  );
  t.equal(got.length, n, 'each exactly once');

  // A new member of the group starts from the committed offsets: nothing is released again.
  await consumer.close();
  const again: number[] = [];
  await bus.consumeDelayed<number>({
    groupId: 'later',
    topics: [tier],
    delayMs: () => DELAY_MS,
    handle: async (r) => void again.push(r.value),
  });
  await producer.send(tier, [{ key: 'k0', value: -1 }]);
  await waitFor('the new record', () => again.includes(-1), 30_000);
  t.same(again, [-1], 'only the record written after the restart');
});

t.test('delayed consumer: a handler failure is retried and nothing behind it is skipped', async (t) => {
  const tier = TIER;
  const { bus, producer } = await busWithTopic(t, tier);
  const seen = new Map<number, number>();
  let failures = 0;
  await bus.consumeDelayed<number>({
    groupId: 'flaky',
    topics: [tier],
    delayMs: () => 200,
    async handle(r) {
      seen.set(r.value, (seen.get(r.value) ?? 0) + 1);
      // Record 5 fails the first time it is handled.
      if (r.value === 5 && (seen.get(5) ?? 0) === 1) {
        failures++;
        throw new Error('produce failed');
      }
    },
  });
  // One key: one partition, so records after 5 sit behind it.
  await producer.send(
    tier,
    Array.from({ length: 20 }, (_, i) => ({ key: 'same', value: i })),
  );
  await waitFor('every record handled after the failure', () => seen.size === 20 && (seen.get(5) ?? 0) >= 2, 60_000);
  t.equal(failures, 1, 'the failure happened');
  for (let i = 0; i < 20; i++) t.ok((seen.get(i) ?? 0) >= 1, `record ${i} handled`);
  for (let i = 0; i < 5; i++) t.equal(seen.get(i), 1, `record ${i}, committed before the failure, handled once`);
});

t.test('a batch consumer with batchWaitMs lets its fetch fill: records sent apart arrive together', async (t) => {
  const topic: TopicDef = { name: 'spread', key: 'k', description: 'records sent apart' };
  const { bus, producer } = await busWithTopic(t, topic);
  /** Batches a consumer sees for five records sent 60 ms apart, once it is reading. */
  const batchesOf = async (groupId: string, batchWaitMs?: number) => {
    const batches: number[][] = [];
    await bus.consume<number>({
      groupId,
      topics: [topic],
      fromBeginning: false,
      ...(batchWaitMs ? { batchWaitMs } : {}),
      handleBatch: async (rs) => void batches.push(rs.map((r) => r.value)),
    });
    const seen = () => batches.flat().filter((v) => v >= 0);
    // It starts at the end: the records that count are sent once it has read a first one.
    await waitFor(
      `${groupId} reading`,
      async () => {
        await producer.send(topic, [{ key: 'same', value: -1 }]);
        return batches.length > 0;
      },
      30_000,
    );
    batches.length = 0;
    for (let i = 0; i < 5; i++) {
      await producer.send(topic, [{ key: 'same', value: i }]);
      await new Promise((r) => setTimeout(r, 60));
    }
    await waitFor(`${groupId}: all five`, () => seen().length >= 5, 30_000);
    return batches.map((b) => b.filter((v) => v >= 0)).filter((b) => b.length);
  };
  const apart = await batchesOf(uniqueName('apart'));
  // Waits of 2 s over a 240 ms spread: at most one fetch ends between the first and the last.
  const together = await batchesOf(uniqueName('together'), 2000);
  t.ok(apart.length >= 3, `without a wait each fetch returns what is there: ${JSON.stringify(apart)}`);
  t.ok(together.length <= 2, `with a wait the fetch holds for more: ${JSON.stringify(together)}`);
  t.same(together.flat(), [0, 1, 2, 3, 4], 'in order, each once');
});

t.test('a batch consumer gets the partitions of one fetch in one call, each partition in order', async (t) => {
  const topic: TopicDef = { name: 'parts', key: 'k', description: 'records on both partitions' };
  const { bus, producer } = await busWithTopic(t, topic);
  // Keys spread over both partitions, written before the consumer starts: its first fetch holds both.
  const n = 200;
  await producer.send(
    topic,
    Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: i })),
  );
  const calls: InRecord<number>[][] = [];
  await bus.consume<number>({ groupId: uniqueName('parts'), topics: [topic], handleBatch: async (rs) => void calls.push(rs) });
  await waitFor('every record', () => calls.flat().length >= n, 30_000);
  const partitionsPerCall = calls.map((c) => new Set(c.map((r) => r.partition)).size);
  t.ok(partitionsPerCall.includes(2), `a call with both partitions: ${JSON.stringify(partitionsPerCall)}`);
  t.same(
    calls
      .flat()
      .map((r) => r.value)
      .sort((a, b) => a - b),
    Array.from({ length: n }, (_, i) => i),
    'each record once',
  );
  for (const p of [0, 1]) {
    const offsets = calls
      .flat()
      .filter((r) => r.partition === p)
      .map((r) => Number(r.offset));
    t.ok(offsets.length > 0, `partition ${p} had records`);
    t.same(
      offsets,
      [...offsets].sort((a, b) => a - b),
      `partition ${p} in order`,
    );
  }
});

t.test('a batch consumer with fetchMaxBytes takes a backlog in calls of about that size, a larger record whole', async (t) => {
  const topic: TopicDef = { name: 'backlog', key: 'k', description: 'a backlog of ~1 KB records' };
  const { bus, producer } = await busWithTopic(t, topic);
  // 400 records of ~1 KB over both partitions, ten a send (record batches of ~5 KB), and one of
  // 100 KB in the middle: a backlog the consumer finds when it starts.
  const n = 401;
  const big = 200;
  const value = (i: number) => ({ i, pad: 'x'.repeat(i === big ? 100 * 1024 : 1000) });
  const sends = [
    ...Array.from({ length: 20 }, (_, s) => Array.from({ length: 10 }, (_, j) => s * 10 + j)),
    [big],
    ...Array.from({ length: 20 }, (_, s) => Array.from({ length: 10 }, (_, j) => big + 1 + s * 10 + j)),
  ];
  for (const ids of sends) {
    await producer.send(
      topic,
      ids.map((i) => ({ key: `k${i}`, value: value(i) })),
    );
  }
  const limit = 32 * 1024;
  /** The value bytes of each handleBatch call, and the records in the order handled. */
  const callsOf = async (fetchMaxBytes?: number) => {
    const calls: Array<{ bytes: number; values: number[]; records: InRecord<{ i: number }>[] }> = [];
    await bus.consume<{ i: number; pad: string }>({
      groupId: uniqueName('backlog'),
      topics: [topic],
      ...(fetchMaxBytes ? { fetchMaxBytes } : {}),
      handleBatch: async (rs) =>
        void calls.push({
          bytes: rs.reduce((sum, r) => sum + JSON.stringify(r.value).length, 0),
          values: rs.map((r) => r.value.i),
          records: rs,
        }),
    });
    await waitFor('the whole backlog', () => calls.reduce((sum, c) => sum + c.values.length, 0) >= n, 30_000);
    return calls;
  };
  const bounded = await callsOf(limit);
  const unbounded = await callsOf();
  const overLimit = bounded.filter((c) => c.bytes > limit && !c.values.includes(big));
  t.same(
    overLimit.map((c) => c.bytes),
    [],
    `every call without the large record within ${limit} bytes (${bounded.length} calls)`,
  );
  t.ok(
    bounded.some((c) => c.values.includes(big)),
    'the record larger than the fetch limit came through',
  );
  t.ok(bounded.length >= 12, `the backlog took many fetches: ${bounded.length}`);
  t.ok(
    unbounded.some((c) => c.bytes > limit * 4),
    `without the limit a call holds more: ${Math.max(...unbounded.map((c) => c.bytes))} bytes`,
  );
  const handled = bounded.flatMap((c) => c.records);
  t.same(
    handled.map((r) => r.value.i).sort((a, b) => a - b),
    Array.from({ length: n }, (_, i) => i),
    'each record once',
  );
  for (const p of [0, 1]) {
    const offsets = handled.filter((r) => r.partition === p).map((r) => Number(r.offset));
    t.same(
      offsets,
      [...offsets].sort((a, b) => a - b),
      `partition ${p} in order`,
    );
  }
});

t.test('a batch consumer with fetchMaxBytes reads one busy partition up to the whole limit a fetch', async (t) => {
  // One destination's attempts, one tenant's events: everything on one partition. A fetch that gave
  // a partition only a share of its limit capped such a consumer at that share a round trip.
  const topic: TopicDef = { name: 'hot', key: 'k', description: 'one busy partition' };
  const { bus, producer } = await busWithTopic(t, topic);
  const n = 300;
  for (let s = 0; s < n / 10; s++) {
    await producer.send(
      topic,
      Array.from({ length: 10 }, (_, j) => ({ key: 'same', value: { i: s * 10 + j, pad: 'x'.repeat(1000) } })),
    );
  }
  const limit = 64 * 1024;
  const calls: Array<{ bytes: number; values: number[] }> = [];
  await bus.consume<{ i: number; pad: string }>({
    groupId: uniqueName('hot'),
    topics: [topic],
    fetchMaxBytes: limit,
    handleBatch: async (rs) =>
      void calls.push({ bytes: rs.reduce((sum, r) => sum + JSON.stringify(r.value).length, 0), values: rs.map((r) => r.value.i) }),
  });
  await waitFor('the whole backlog', () => calls.reduce((sum, c) => sum + c.values.length, 0) >= n, 30_000);
  const largest = Math.max(...calls.map((c) => c.bytes));
  // Record batches of ~10 KB: a share of an eighth (8 KiB) would bring one batch a fetch.
  t.ok(largest > limit / 2, `one fetch brought ${largest} bytes of the one partition (limit ${limit})`);
  t.ok(largest <= limit, `and no more than the limit`);
  t.same(
    calls.flatMap((c) => c.values),
    Array.from({ length: n }, (_, i) => i),
    'each record once, in order',
  );
});

t.test('delayed consumer: a record is released soon after it is due, not after a fetch wait', async (t) => {
  const { bus, producer } = await busWithTopic(t, TIER);
  const late: number[] = [];
  const delay = 500;
  await bus.consumeDelayed<number>({
    groupId: 'prompt',
    topics: [TIER],
    delayMs: () => delay,
    handle: async (r) => void late.push(Date.now() - (r.timestamp + delay)),
  });
  // The first record waits for the group to form; the ones after it for their own delay. Each
  // written to one partition while the other stays empty, so a resumed partition waits for the
  // fetch in flight (a long poll of the empty one) or kafkajs's sleep when both are paused.
  await producer.send(TIER, [{ key: 'same', value: 0 }]);
  await waitFor('the first record', () => late.length === 1, 30_000);
  for (let i = 1; i <= 20; i++) {
    await producer.send(TIER, [{ key: 'same', value: i }]);
    await new Promise((r) => setTimeout(r, 150));
  }
  await waitFor('every record released', () => late.length === 21, 30_000);
  const worst = Math.max(...late.slice(1));
  // The slack is a tenth of the delay (50 ms) and a fetch waits at most DELAYED_FETCH_MAX_WAIT_MS;
  // kafkajs's default wait (5 s) made records 2.5 s late at the median.
  t.ok(worst < DELAYED_FETCH_MAX_WAIT_MS + 1000, `latest release ${worst} ms after due`);
  t.ok(Math.min(...late) >= 0, 'none early');
});

t.test('delayed consumer: records larger than its fetch limits are released, each once, in order', async (t) => {
  const { bus, producer } = await busWithTopic(t, TIER);
  const got: number[] = [];
  await bus.consumeDelayed<{ i: number }>({
    groupId: 'large',
    topics: [TIER],
    delayMs: () => 200,
    handle: async (r) => void got.push(r.value.i),
  });
  // One partition: small records around one over the per-partition limit and one over the whole
  // fetch's (each still under the topics' record batch limit), each sent as its own batch.
  const { maxBytes, maxBytesPerPartition } = DELAYED_FETCH_LIMITS;
  const sizes = [1, maxBytesPerPartition * 2, 1, maxBytes * 1.5, 1];
  t.ok(maxBytes * 1.5 < DEFAULT_MAX_MESSAGE_BYTES - 1024, 'the largest record fits a batch');
  for (const [i, bytes] of sizes.entries()) {
    await producer.send(TIER, [{ key: 'same', value: { i, pad: 'x'.repeat(bytes) } }]);
  }
  await waitFor('every record released', () => got.length >= sizes.length, 30_000);
  await new Promise((r) => setTimeout(r, 500));
  t.same(got, [0, 1, 2, 3, 4]);
});

t.test("a keyed record is read back from its key's partition, the one the Java client would pick", async (t) => {
  const topic: TopicDef = { name: 'keyed', key: 'k', description: 'keyed records' };
  const partitions = 7;
  const bus = openBus(t, `${uniqueName('kp')}.`, undefined, partitions);
  await bus.ensureTopics([topic]);
  const producer = await bus.producer();
  // The Java client's partitions for two of these keys among 7, worked out from its murmur2 figures
  // (shared/test/partitioner.test.ts): 'foobar' -790332482 & 0x7fffffff = 1357151166, % 7 = 0.
  const keys = ['foobar', 'abc', ...Array.from({ length: 60 }, (_, i) => `ten_${i}`)];
  await producer.send(
    topic,
    keys.map((key, i) => ({ key, value: i })),
  );
  const got: InRecord<number>[] = [];
  await bus.consume<number>({ groupId: 'keyed', topics: [topic], handle: async (r) => void got.push(r) });
  await waitFor('every keyed record', () => got.length >= keys.length, 30_000);
  t.equal(got.find((r) => r.key === 'foobar')?.partition, 0);
  t.equal(got.find((r) => r.key === 'abc')?.partition, (479470107 & 0x7fffffff) % partitions);
  const wrong = got.filter((r) => r.partition !== partitionOfKey(r.key, partitions));
  t.same(wrong, [], 'every record on the partition of its key');
  t.ok(new Set(got.map((r) => r.partition)).size > 3, 'the keys spread over the partitions');
});

t.test('records up to the gateway body limit, several to one partition, are written and read back', async (t) => {
  const topic: TopicDef = { name: 'big', key: 'k', description: 'large records' };
  // Topics limited to 2 MiB per record batch: the write below, 2.8 MB to one partition, must be split.
  const { bus, producer } = await busWithTopic(t, topic, 2 * 1024 * 1024);
  // Three records of ~600 KB and one of ~1 MB, same key: one partition.
  const records = [600, 600, 600, 1000].map((kb, i) => ({ key: 'same', value: { i, pad: 'x'.repeat(kb * 1024) } }));
  await producer.sendMany([{ topic, records }]);
  const got: number[] = [];
  await bus.consume<{ i: number }>({ groupId: 'big', topics: [topic], handle: async (r) => void got.push(r.value.i) });
  await waitFor('every large record', () => got.length === 4, 30_000);
  t.same(got, [0, 1, 2, 3]);
});

t.test('produce requests are split to stay under the size budget, in order; an oversized record goes alone', async (t) => {
  const m = (id: number, bytes: number) => ({ id, message: { key: 'k', value: 'x'.repeat(bytes), headers: {} } });
  const ids = (groups: Iterable<Array<{ id: number }>>) => [...groups].map((g) => g.map((x) => x.id));
  t.same(ids(splitBySize([m(1, 100), m(2, 100), m(3, 100)], 10_000)), [[1, 2, 3]], 'small writes stay one request');
  t.same(
    ids(splitBySize([m(1, 400), m(2, 400), m(3, 400), m(4, 400)], 1000)),
    [
      [1, 2],
      [3, 4],
    ],
    'split in order',
  );
  t.same(ids(splitBySize([m(1, 100), m(2, 5000), m(3, 100)], 1000)), [[1], [2], [3]], 'a record over the budget alone');
  t.same([...splitBySize([], 1000)], [], 'nothing to send, no request');
});

t.test('topics created here allow large batches; an existing topic with a smaller limit is named at start', async (t) => {
  const prefix = `${uniqueName('kb')}.`;
  const old: TopicDef = { name: 'old', key: 'k', description: 'made before, with the broker default' };
  const fresh: TopicDef = { name: 'fresh', key: 'k', description: 'made by ensureTopics' };
  const brokers = [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'];
  const admin = new kafkajs.Kafka({ clientId: 'kafka-bus-test-admin', brokers, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  // The broker may answer UNKNOWN_TOPIC_OR_PARTITION (retriable) while a new topic's metadata settles.
  await waitFor('the old topic', () =>
    admin.createTopics({ waitForLeaders: true, topics: [{ topic: `${prefix}old`, numPartitions: 1 }] }).then(() => true),
  );

  const lines: Array<{ msg: string; topics?: string[] }> = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const bus = createKafkaBus({ brokers, clientId: 'kafka-bus-test', topicPrefix: prefix, partitions: 1, replicationFactor: 1, log });
  t.teardown(() => bus.close());
  await bus.ensureTopics([old, fresh]);

  const { resources } = await waitFor('the fresh topic config', () =>
    admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: `${prefix}fresh`, configNames: ['max.message.bytes'] }],
    }),
  );
  t.equal(resources[0]?.configEntries[0]?.configValue, String(DEFAULT_MAX_MESSAGE_BYTES), 'a topic made here takes the limit');
  const warning = lines.find((l) => l.msg.includes('max.message.bytes'));
  t.ok(warning, 'a warning at start');
  t.match(warning?.topics, [new RegExp(`^${prefix.replace('.', '\\.')}old \\(\\d+\\)$`)], 'naming the old topic only');
});

t.test('services creating the same topics at once all start, and the topics get the message limit', async (t) => {
  // Every service ensures every topic at start; the broker may still deny a topic it has just
  // created to the one that created it (kafkajs' leader check), which must not stop a service.
  const topics: TopicDef[] = Array.from({ length: 12 }, (_, i) => ({ name: `race${i}`, key: 'k', description: 'a topic' }));
  for (let round = 0; round < 3; round++) {
    const prefix = `${uniqueName('kb-race')}.`;
    const buses = Array.from({ length: 4 }, () => openBus(t, prefix));
    const outcomes = await Promise.allSettled(buses.map((b) => b.ensureTopics(topics)));
    t.same(
      outcomes.map((o) => o.status),
      ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled'],
      `round ${round}: every bus started (${outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'ok')).join('; ')})`,
    );
    const admin = new kafkajs.Kafka({
      brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'],
      logLevel: kafkajs.logLevel.NOTHING,
    }).admin();
    await admin.connect();
    try {
      const names = topics.map((x) => `${prefix}${x.name}`);
      const describe = () =>
        admin.describeConfigs({
          includeSynonyms: false,
          resources: names.map((name) => ({ type: kafkajs.ConfigResourceTypes.TOPIC, name, configNames: ['max.message.bytes'] })),
        });
      // This check's own read may come before the broker has the new topics' metadata everywhere
      // (UNKNOWN_TOPIC_OR_PARTITION, retriable; seen on a loaded host): ask again for up to 15 s.
      let described: Awaited<ReturnType<typeof describe>> | undefined;
      for (const end = Date.now() + 15_000; !described; ) {
        described = await describe().catch((err: { retriable?: boolean }) => {
          if (!err.retriable || Date.now() > end) throw err;
          return new Promise<undefined>((r) => setTimeout(() => r(undefined), 200));
        });
      }
      t.same(
        described.resources.map((r) => r.configEntries[0]?.configValue),
        names.map(() => String(DEFAULT_MAX_MESSAGE_BYTES)),
        `round ${round}: all ${names.length} topics exist with max.message.bytes`,
      );
    } finally {
      await admin.disconnect();
    }
  }
});

t.test('a send after a failed one is written, though the broker kept the failed one', async (t) => {
  // The fault: a connection breaks after a produce request reached the broker, before its answer,
  // and new connections are refused until kafkajs gives up on that send (here after two retries).
  // kafkajs then hands the failed batch's sequence numbers to the next batch, which the broker took
  // for a repeat of the kept one and dropped, answering success (a publish answered 202, lost).
  let fault: 'none' | 'cut the next produce' | 'refuse' = 'none';
  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    const socket = connect({ host, port }, onConnect);
    if (fault === 'refuse') {
      setImmediate(() => socket.destroy(new Error('refused by the test')));
      return socket;
    }
    const write = socket.write.bind(socket) as (chunk: Buffer, encoding: BufferEncoding) => boolean;
    socket.write = ((chunk: Buffer, encoding: BufferEncoding) => {
      const written = write(chunk, encoding);
      // A request is its size, then its API key (0: Produce).
      if (fault === 'cut the next produce' && Buffer.isBuffer(chunk) && chunk.readInt16BE(4) === 0) {
        fault = 'refuse';
        socket.pause(); // the answer is never read; the broker has the batch by the cut
        setTimeout(() => socket.destroy(new Error('cut by the test')), 500);
      }
      return written;
    }) as typeof socket.write;
    return socket;
  };
  const topic: TopicDef = { name: 'kept', key: 'k', description: 'one partition' };
  const prefix = `${uniqueName('kb-kept')}.`;
  const bus = createKafkaBus({
    brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'],
    clientId: 'kafka-bus-test',
    topicPrefix: prefix,
    partitions: 1,
    replicationFactor: 1,
    log,
    kafkajs: { socketFactory, retry: { retries: 2, initialRetryTime: 50, maxRetryTime: 200 } },
  });
  t.teardown(() => bus.close());
  await bus.ensureTopics([topic]);
  // The producer here retries for a few hundred ms only: on a busy host the broker may not yet
  // serve the new topic's metadata, so wait for its leader first.
  const admin = new kafkajs.Kafka({ brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  await waitForLeaders(admin, `${prefix}kept`, 1).finally(() => admin.disconnect());
  const producer = await bus.producer();
  await producer.send(topic, [{ key: 'k', value: 'before' }]);
  fault = 'cut the next produce';
  await t.rejects(producer.send(topic, [{ key: 'k', value: 'kept, its answer lost' }]), 'the send whose answer was lost failed');
  fault = 'none';
  await producer.send(topic, [{ key: 'k', value: 'after' }]);

  const got: string[] = [];
  await bus.consume<string>({ groupId: 'reader', topics: [topic], handle: async (r) => void got.push(r.value as string) });
  await waitFor('the record sent after the failure', () => got.includes('after'), 15_000).catch(() => undefined);
  t.same(got, ['before', 'kept, its answer lost', 'after'], 'every record is in the topic, the one after the failure too');
});

t.test('a consumer that kafkajs stopped for good is started again, and skips nothing', async (t) => {
  const kafka = new kafkajs.Kafka({ brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const topic = uniqueName('kb-restart');
  await createTopicReady(admin, topic, 1);
  const producer = kafka.producer();
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const consumer = kafka.consumer({ groupId: uniqueName('kb-restart') });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const restarts: boolean[] = [];
  consumer.on(consumer.events.CRASH, ({ payload }) => void restarts.push(payload.restart));
  const got: string[] = [];
  let failed = false;
  const stop = await runKept(
    consumer,
    {
      eachMessage: async ({ message }) => {
        // An error kafkajs does not retry, as its "Failed to find group coordinator" is.
        if (!failed) {
          failed = true;
          throw new kafkajs.KafkaJSNonRetriableError('stopped by the test');
        }
        got.push(String(message.value));
      },
    },
    log,
  );
  t.teardown(async () => {
    stop();
    await consumer.disconnect();
  });
  await producer.send({ topic, messages: [{ value: 'a' }, { value: 'b' }] });
  await waitFor('both records, after the restart', () => got.length >= 2, 20_000).catch(() => undefined);
  t.same(restarts, [false], 'kafkajs stopped the consumer and would not restart it');
  t.same(got, ['a', 'b'], 'the restarted consumer read from the failed record on');
});
