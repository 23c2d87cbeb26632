// One conformance suite for both implementations of the Bus port (shared/src/kafka/index.ts): the
// Kafka bus against the real broker and the embedded log in a scratch directory. The services are
// written against the port only, so each behaviour they rely on is checked the same way on both:
// per-key order with many in flight, headers and values round-trip, a failing handler retried in
// place with nothing behind it skipped, commits that survive a consumer's restart, a new group
// reading from the beginning, batch handling, broadcast readers, delayed consumption, and dispatch
// keys (records of one record key limited, pinned and diverted apart).
// Implementation details (fetch sizes, segments, crash recovery) stay in kafka-bus.test.ts and
// embedded-bus.test.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createEmbeddedBus } from '../src/embedded/bus.ts';
import type { Bus, InRecord } from '../src/bus/index.ts';
import { createKafkaBus } from '../src/kafka/index.ts';
import type { TopicDef } from '../src/bus/topics.ts';
import { createLogger } from '../src/log.ts';
import { uniqueName, waitFor } from '../src/testing/index.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}
const log = createLogger('test', 'silent');
const PARTITIONS = 3;

/** Opens a fresh bus (its own topic prefix or directory) with `topics` created; closed at teardown. */
type OpenBus = (t: Teardown, topics: TopicDef[]) => Promise<Bus>;

const IMPLEMENTATIONS: Array<[string, OpenBus]> = [
  [
    'kafka',
    async (t, topics) => {
      const bus = createKafkaBus({
        brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'],
        clientId: 'bus-conformance',
        topicPrefix: `${uniqueName('conf')}.`,
        partitions: PARTITIONS,
        replicationFactor: 1,
        log,
      });
      t.teardown(() => bus.close());
      await bus.ensureTopics(topics);
      return bus;
    },
  ],
  [
    'embedded',
    async (t, topics) => {
      const dir = mkdtempSync(join(tmpdir(), 'sy-conf-'));
      const bus = await createEmbeddedBus({ dir, topicPrefix: 'c.', partitions: PARTITIONS, log });
      t.teardown(async () => {
        await bus.close();
        rmSync(dir, { recursive: true, force: true });
      });
      await bus.ensureTopics(topics);
      return bus;
    },
  ],
];

const topic = (name: string): TopicDef => ({ name, key: 'k', description: name });
const until = (what: string, fn: () => boolean, ms = 30_000) => waitFor(what, fn, ms);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Msg {
  key: string;
  n: number;
}
const records = (keys: number, perKey: number) =>
  Array.from({ length: keys * perKey }, (_, i) => ({ key: `key-${i % keys}`, value: { key: `key-${i % keys}`, n: i } as Msg }));

for (const [name, open] of IMPLEMENTATIONS) {
  t.test(`${name} bus`, async (t) => {
    t.test('per-key order and partition hold with many records in flight; values and headers round-trip', async (t) => {
      const T = topic('orders');
      const bus = await open(t, [T]);
      const sent = records(10, 30);
      const seen: InRecord<Msg>[] = [];
      await bus.consume<Msg>({
        groupId: 'g',
        topics: [T],
        concurrency: 8,
        keyConcurrency: 1,
        async handle(r) {
          // Uneven handling times: only the per-key limit keeps a key's records in order.
          await sleep((r.value.n * 7) % 5);
          seen.push(r);
        },
      });
      const producer = await bus.producer();
      await producer.send(
        T,
        sent.map((r) => ({ ...r, headers: { traceparent: `tp-${r.value.n}` } })),
      );
      await until('every record handled', () => seen.length >= sent.length);
      t.equal(seen.length, sent.length, 'each record once');
      for (let k = 0; k < 10; k++) {
        const mine = seen.filter((r) => r.key === `key-${k}`);
        t.same(
          mine.map((r) => r.value.n),
          sent.filter((r) => r.key === `key-${k}`).map((r) => r.value.n),
          `key-${k}: in the order sent`,
        );
        t.equal(new Set(mine.map((r) => r.partition)).size, 1, `key-${k}: one partition`);
      }
      t.ok(
        seen.every((r) => r.headers.traceparent === `tp-${r.value.n}` && r.value.key === r.key && !r.decodeError),
        'values, keys and headers as sent',
      );
      t.ok(
        seen.every((r) => typeof r.offset === 'string' && r.topic.endsWith('orders') && r.timestamp > 0),
        'offsets, topics and timestamps',
      );
      await producer.close();
    });

    t.test('keepRaw: each record comes with the bytes it was written as, besides its value', async (t) => {
      const T = topic('raw');
      const bus = await open(t, [T]);
      // Bytes a parse and a re-serialisation would not give back: spacing, a float written 1.0, an escape.
      const texts = ['{ "n": 1.0,  "s": "\\u00e9" }', '{"n":2}', '{not json'];
      const kept: InRecord<unknown>[] = [];
      const batched: InRecord<unknown>[] = [];
      const plain: InRecord<unknown>[] = [];
      await bus.consume({ groupId: 'kept', topics: [T], keepRaw: true, handle: async (r) => void kept.push(r) });
      await bus.consume({ groupId: 'batched', topics: [T], keepRaw: true, handleBatch: async (rs) => void batched.push(...rs) });
      await bus.consume({ groupId: 'plain', topics: [T], handle: async (r) => void plain.push(r) });
      const producer = await bus.producer();
      await producer.send(
        T,
        texts.map((x) => ({ key: 'one-key', value: Buffer.from(x) })),
      );
      await until('every reader has every record', () => kept.length === 3 && batched.length === 3 && plain.length === 3);
      for (const got of [kept, batched]) {
        t.same(
          got.map((r) => r.raw?.toString()),
          texts,
          'the bytes as written',
        );
        t.same(got[0]?.value, { n: 1, s: 'é' }, 'and the value decoded');
        t.ok(got[2]?.decodeError, 'bytes that are not JSON: a decode error, with their bytes');
      }
      t.same(
        plain.map((r) => r.raw === undefined),
        [true, true, false],
        'without keepRaw only undecodable records carry their bytes',
      );
      await producer.close();
    });

    t.test("dispatchKey: records of one record key run apart by it (an ordered one's pin, a stalled one's diversion)", async (t) => {
      const T = topic('dispatch');
      const bus = await open(t, [T]);
      interface Rec {
        tenant: string;
        n: number;
        ordered?: boolean;
      }
      const name = (r: InRecord<Rec>) => `${r.value.tenant}${r.value.n}`;
      const started: string[] = [];
      const handled: string[] = [];
      const diverted: string[] = [];
      let release = () => {};
      const hung = new Promise<void>((r) => (release = r));
      const consumer = await bus.consume<Rec>({
        groupId: 'g',
        topics: [T],
        concurrency: 8,
        keyConcurrency: 2,
        keyHealth: { stallMs: 100 },
        dispatchKey: (r) => `${r.value.tenant}\u0000${r.key}`,
        orderedKey: (r) => r.value.ordered === true,
        onKeyBacklog: async (r) => void diverted.push(name(r)),
        async handle(r) {
          started.push(name(r));
          // a's first record and c's first two hang until the end.
          if (['a0', 'c0', 'c1'].includes(name(r))) await hung;
          handled.push(name(r));
        },
      });
      // Bounded waits that do not throw: the hanging records are released whatever the outcome.
      const soon = (what: string, fn: () => boolean) =>
        until(what, fn).then(
          () => true,
          () => false,
        );
      const producer = await bus.producer();
      try {
        // Tenant a's ordered destination and tenant b's, both under the record key `default`.
        await producer.send(T, [
          { key: 'default', value: { tenant: 'a', n: 0, ordered: true } },
          { key: 'default', value: { tenant: 'a', n: 1, ordered: true } },
          { key: 'default', value: { tenant: 'b', n: 0 } },
          { key: 'default', value: { tenant: 'b', n: 1 } },
          { key: 'default', value: { tenant: 'b', n: 2 } },
        ]);
        t.ok(
          await soon("b's records", () => ['b0', 'b1', 'b2'].every((id) => handled.includes(id))),
          "b's records ran while a's ordered first one hangs",
        );
        t.notOk(started.includes('a1'), "a's second waits for its first");
        // Tenant c's destination fills its slots and stalls; tenant d's, same record key, keeps up.
        await producer.send(T, [
          { key: 'other', value: { tenant: 'c', n: 0 } },
          { key: 'other', value: { tenant: 'c', n: 1 } },
        ]);
        await soon("c's first two", () => started.includes('c0') && started.includes('c1'));
        await sleep(300);
        t.ok(consumer.divertsNow('c\u0000other') >= 100, "c's key is stalled, by its dispatch key");
        t.equal(consumer.divertsNow('d\u0000other'), 0, "d's is not");
        await producer.send(T, [
          { key: 'other', value: { tenant: 'c', n: 2 } },
          { key: 'other', value: { tenant: 'd', n: 0 } },
        ]);
        t.ok(await soon("d's record", () => handled.includes('d0')), "d's record ran");
        await soon("c's third diverted", () => diverted.includes('c2'));
        t.same(diverted, ['c2'], "only c's record was diverted");
      } finally {
        release();
        await producer.close();
      }
      t.ok(await soon('every record handled or diverted', () => handled.length + diverted.length >= 9));
      t.ok(handled.indexOf('a0') < handled.indexOf('a1'), "a's in order");
    });

    t.test('a failing handler is retried in place; nothing behind it is skipped', async (t) => {
      const T = topic('flaky');
      const bus = await open(t, [T]);
      let failures = 0;
      const seen: number[] = [];
      await bus.consume<Msg>({
        groupId: 'g',
        topics: [T],
        async handle(r) {
          if (r.value.n === 3 && failures < 3) {
            failures++;
            throw new Error('our own fault, for now');
          }
          seen.push(r.value.n);
        },
      });
      const producer = await bus.producer();
      await producer.send(
        T,
        [0, 1, 2, 3, 4, 5].map((n) => ({ key: 'one', value: { key: 'one', n } })),
      );
      await until('all six handled', () => seen.length >= 6);
      t.equal(failures, 3, 'the failing record was tried again until it passed');
      t.same(seen, [0, 1, 2, 3, 4, 5], 'in order, none skipped, none twice');
      await producer.close();
    });

    t.test('commits survive a consumer restart; a new group reads from the beginning', async (t) => {
      const T = topic('durable');
      const bus = await open(t, [T]);
      const producer = await bus.producer();
      const first: number[] = [];
      const c1 = await bus.consume<Msg>({ groupId: 'g', topics: [T], handle: async (r) => void first.push(r.value.n) });
      await producer.send(
        T,
        records(4, 5).map((r) => r),
      );
      await until('the first 20', () => first.length >= 20);
      await c1.close();
      await producer.send(
        T,
        records(4, 5).map((r) => ({ ...r, value: { ...r.value, n: r.value.n + 100 } })),
      );
      const second: number[] = [];
      await bus.consume<Msg>({ groupId: 'g', topics: [T], handle: async (r) => void second.push(r.value.n) });
      await until('the next 20', () => second.length >= 20);
      await sleep(500);
      t.same(
        [...second].sort((a, b) => a - b),
        Array.from({ length: 20 }, (_, i) => i + 100),
        'the restarted group gets exactly what it had not committed',
      );
      const fresh: number[] = [];
      await bus.consume<Msg>({ groupId: 'other', topics: [T], handle: async (r) => void fresh.push(r.value.n) });
      await until('a new group reads all 40', () => fresh.length >= 40);
      t.equal(fresh.length, 40);
      await producer.close();
    });

    t.test('batch handling: every record once, in per-partition order, committed after the batch', async (t) => {
      const T = topic('batched');
      const bus = await open(t, [T]);
      const producer = await bus.producer();
      const batches: InRecord<Msg>[][] = [];
      const c1 = await bus.consume<Msg>({ groupId: 'g', topics: [T], handleBatch: async (rs) => void batches.push(rs) });
      await producer.send(T, records(6, 10));
      await until('60 records in batches', () => batches.flat().length >= 60);
      const all = batches.flat();
      t.equal(new Set(all.map((r) => r.value.n)).size, 60, 'each record once');
      for (let k = 0; k < 6; k++) {
        const ns = all.filter((r) => r.key === `key-${k}`).map((r) => r.value.n);
        t.same(
          ns,
          [...ns].sort((a, b) => a - b),
          `key-${k}: in order`,
        );
      }
      await c1.close();
      const again: InRecord<Msg>[] = [];
      await bus.consume<Msg>({ groupId: 'g', topics: [T], handleBatch: async (rs) => void again.push(...rs) });
      await producer.send(T, [{ key: 'late', value: { key: 'late', n: 999 } }]);
      await until('the record sent after the restart', () => again.length >= 1);
      await sleep(500);
      t.same(
        again.map((r) => r.value.n),
        [999],
        'nothing handled before the restart comes again',
      );
      await producer.close();
    });

    t.test('broadcast readers each get every record written after they started, nothing earlier', async (t) => {
      const T = topic('changes');
      const bus = await open(t, [T]);
      const producer = await bus.producer();
      await producer.send(T, [{ key: 'early', value: { key: 'early', n: -1 } }]);
      const a: number[] = [];
      const b: number[] = [];
      for (const list of [a, b]) {
        await bus.consume<Msg>({ groupId: 'cache', topics: [T], broadcast: true, handle: async (r) => void list.push(r.value.n) });
      }
      // A reader starts at the end once it is assigned: probe until both read, then send the batch.
      let probe = 1000;
      await waitFor(
        'both readers reading',
        async () => {
          await producer.send(T, [{ key: 'probe', value: { key: 'probe', n: probe++ } }]);
          return a.some((n) => n >= 1000) && b.some((n) => n >= 1000);
        },
        60_000,
      );
      await producer.send(T, records(3, 5));
      await until('both readers got the batch', () => [a, b].every((l) => l.filter((n) => n < 1000 && n >= 0).length >= 15));
      for (const [label, list] of [
        ['first', a],
        ['second', b],
      ] as const) {
        t.same(
          list.filter((n) => n >= 0 && n < 1000).sort((x, y) => x - y),
          Array.from({ length: 15 }, (_, i) => i),
          `${label} reader: the whole batch, though both share one group id`,
        );
        t.notOk(list.includes(-1), `${label} reader: nothing from before it started`);
      }
      await producer.close();
    });

    t.test('delayed consumption: each record waits its delay and is released once', async (t) => {
      const T = topic('tier-1s');
      const bus = await open(t, [T]);
      const producer = await bus.producer();
      const released: Array<{ n: number; waited: number }> = [];
      await bus.consumeDelayed<Msg & { at: number }>({
        groupId: 'scheduler',
        topics: [T],
        delayMs: () => 1000,
        handle: async (r) => void released.push({ n: r.value.n, waited: Date.now() - r.value.at }),
      });
      for (let n = 0; n < 5; n++) {
        await producer.send(T, [{ key: `k${n % 2}`, value: { key: `k${n % 2}`, n, at: Date.now() } }]);
        await sleep(100);
      }
      await until('five released', () => released.length >= 5);
      await sleep(1500);
      t.same(released.map((r) => r.n).sort(), [0, 1, 2, 3, 4], 'each once');
      // Record timestamps are the broker's or the log's clock; a few ms of skew is allowed.
      t.ok(
        released.every((r) => r.waited >= 950),
        `none early (waited ${released.map((r) => r.waited).join(', ')} ms)`,
      );
      await producer.close();
    });
  });
}
