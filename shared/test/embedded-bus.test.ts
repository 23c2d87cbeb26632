// The embedded log against the Bus contract the services rely on: per-key order, durable sends,
// durable commits, at-least-once after a crash (a real SIGKILL of a child process), delays.
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import t from 'tap';
import { createEmbeddedBus } from '../src/embedded/bus.ts';
import { lockDirectory } from '../src/embedded/lock.ts';
import type { Bus, InRecord } from '../src/bus/index.ts';
import type { TopicDef } from '../src/bus/topics.ts';
import { createLogger } from '../src/log.ts';
import { waitFor } from '../src/testing/index.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

const log = createLogger('test', 'silent');
const topic = (name: string): TopicDef => ({ name, key: 'k', description: name });
const ORDERS = topic('orders');
const SLOW = topic('slow');
const embeddedModule = new URL('../src/embedded/bus.ts', import.meta.url).href;
const logModule = new URL('../src/log.ts', import.meta.url).href;

function tempDir(t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), 'sy-bus-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function openBus(t: Teardown, dir: string, partitions = 4): Promise<Bus> {
  const bus = await createEmbeddedBus({ dir, topicPrefix: 'x.', partitions, log });
  t.teardown(() => bus.close());
  await bus.ensureTopics([ORDERS, SLOW]);
  return bus;
}

const until = (what: string, fn: () => boolean, ms = 10_000) => waitFor(what, fn, ms);
/** True once `fn` holds, false if it still does not after `ms`: for an assertion that can fail. */
const eventually = (fn: () => boolean, ms = 10_000) =>
  until('', fn, ms).then(
    () => true,
    () => false,
  );

/** Runs a script in a child process; returns its stdout lines as they come, and the child. */
function child(t: Teardown, dir: string, body: string) {
  const file = join(dir, `child-${Date.now()}.ts`);
  writeFileSync(
    file,
    `import { createEmbeddedBus } from '${embeddedModule}';
     import { createLogger } from '${logModule}';
     const ORDERS = { name: 'orders', key: 'k', description: 'orders' };
     const bus = await createEmbeddedBus({ dir: ${JSON.stringify(join(dir, 'log'))}, topicPrefix: 'x.', partitions: 4, log: createLogger('child', 'silent') });
     await bus.ensureTopics([ORDERS]);
     ${body}`,
  );
  const proc = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => void proc.kill('SIGKILL'));
  const lines: string[] = [];
  createInterface({ input: proc.stdout }).on('line', (l) => lines.push(l));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return { proc, lines, exited };
}

/** A directory whose log (under `log/`) holds `n` records of ORDERS, values 0 to n-1 over five keys. */
async function ordersIn(t: Teardown, n: number): Promise<string> {
  const dir = tempDir(t);
  const bus = await openBus(t, join(dir, 'log'));
  await (await bus.producer()).send(
    ORDERS,
    Array.from({ length: n }, (_, i) => ({ key: `k${i % 5}`, value: i })),
  );
  await bus.close();
  return dir;
}

t.test('records of one key keep their order and their partition, with many in flight', async (t) => {
  const bus = await openBus(t, tempDir(t));
  const producer = await bus.producer();
  const keys = Array.from({ length: 20 }, (_, i) => `key-${i}`);
  for (let round = 0; round < 10; round++) {
    await producer.send(
      ORDERS,
      keys.map((k) => ({ key: k, value: { k, n: round } })),
    );
  }
  const seen = new Map<string, number[]>();
  const partitionOf = new Map<string, Set<number>>();
  let running = 0;
  let maxRunning = 0;
  await bus.consume<{ k: string; n: number }>({
    groupId: 'g',
    topics: [ORDERS],
    concurrency: 8,
    keyConcurrency: 1,
    async handle(r) {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((res) => setTimeout(res, Math.random() * 5));
      seen.set(r.key, [...(seen.get(r.key) ?? []), r.value.n]);
      partitionOf.set(r.key, (partitionOf.get(r.key) ?? new Set()).add(r.partition));
      running--;
    },
  });
  await until('every record', () => [...seen.values()].reduce((a, l) => a + l.length, 0) === 200);
  for (const k of keys) t.same(seen.get(k), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], `${k} in order`);
  t.ok(
    [...partitionOf.values()].every((s) => s.size === 1),
    'each key stays in one partition',
  );
  t.ok(new Set([...partitionOf.values()].map((s) => [...s][0])).size > 1, 'keys spread over partitions');
  t.ok(maxRunning > 1, `records ran concurrently (${maxRunning} at once)`);
});

t.test('committed offsets survive a restart; a new group starts from the beginning', async (t) => {
  const dir = tempDir(t);
  let bus = await openBus(t, dir);
  const producer = await bus.producer();
  await producer.send(
    ORDERS,
    Array.from({ length: 30 }, (_, i) => ({ key: `k${i % 3}`, value: i })),
  );
  const got: number[] = [];
  await bus.consume<number>({ groupId: 'batch', topics: [ORDERS], handleBatch: async (rs) => void got.push(...rs.map((r) => r.value)) });
  await until('first 30', () => got.length === 30);
  await bus.close();

  bus = await openBus(t, dir);
  await (await bus.producer()).send(ORDERS, [{ key: 'k1', value: 100 }]);
  const again: number[] = [];
  await bus.consume<number>({ groupId: 'batch', topics: [ORDERS], handleBatch: async (rs) => void again.push(...rs.map((r) => r.value)) });
  const fresh: number[] = [];
  await bus.consume<number>({ groupId: 'other', topics: [ORDERS], handle: async (r) => void fresh.push(r.value) });
  await until('the new record', () => again.length >= 1 && fresh.length === 31);
  await new Promise((r) => setTimeout(r, 200));
  t.same(again, [100], 'the old group resumes after its committed offset');
  t.same(
    [...fresh].sort((a, b) => a - b),
    [...got.sort((a, b) => a - b), 100],
    'a new group reads everything',
  );
});

t.test('a send acknowledged before SIGKILL is never lost', async (t) => {
  const dir = tempDir(t);
  const c = child(
    t,
    dir,
    `const p = await bus.producer();
     for (let i = 0; ; i++) { await p.send(ORDERS, [{ key: 'k' + (i % 7), value: { i, pad: 'x'.repeat(i % 300) } }]); console.log(i); }`,
  );
  await until('200 acknowledged sends', () => c.lines.length >= 200, 30_000);
  c.proc.kill('SIGKILL');
  await c.exited;
  const acked = c.lines.map(Number);
  const bus = await openBus(t, join(dir, 'log'));
  const got = new Set<number>();
  await bus.consume<{ i: number }>({
    groupId: 'check',
    topics: [ORDERS],
    handleBatch: async (rs) => {
      for (const r of rs) got.add(r.value.i);
    },
  });
  t.ok(
    await eventually(() => acked.every((i) => got.has(i))),
    `all ${acked.length} acknowledged records are there (${got.size} in the log)`,
  );
});

t.test('a consumer killed mid-run: records from its committed offset on are delivered again, nothing is lost', async (t) => {
  const dir = await ordersIn(t, 400);
  const c = child(
    t,
    dir,
    `await bus.consume({ groupId: 'crashy', topics: [ORDERS], concurrency: 4, commitIntervalMs: 20,
       async handle(r) {
         // From record 200 on the handler never returns, so the kill always lands mid-run.
         if (r.value >= 200) await new Promise(() => {});
         await new Promise((res) => setTimeout(res, 3));
         console.log(r.value);
       } });`,
  );
  await until('some records handled', () => c.lines.length >= 100, 30_000);
  await new Promise((r) => setTimeout(r, 100)); // at least one commit
  c.proc.kill('SIGKILL');
  await c.exited;
  const before = new Set(c.lines.map(Number));
  const bus = await openBus(t, join(dir, 'log'));
  const after: number[] = [];
  await bus.consume<number>({ groupId: 'crashy', topics: [ORDERS], handle: async (r) => void after.push(r.value) });
  t.ok(
    await eventually(() => [...Array(400).keys()].every((i) => before.has(i) || after.includes(i))),
    'every record handled at least once',
  );
  await new Promise((r) => setTimeout(r, 200));
  t.ok(after.length < 400, `resumed from the committed offsets (${after.length} delivered after the restart)`);
});

t.test('records handled before the log goes quiet are committed while it is quiet, not only at close', async (t) => {
  const dir = await ordersIn(t, 50);
  const c = child(
    t,
    dir,
    // The last record outlasts several commit intervals after every other has started; the interval
    // keeps the process up, as a server would.
    `setInterval(() => {}, 1000);
     await bus.consume({ groupId: 'quiet', topics: [ORDERS], concurrency: 4, commitIntervalMs: 20,
       async handle(r) { await new Promise((res) => setTimeout(res, r.value === 49 ? 150 : 5)); console.log(r.value); } });`,
  );
  await until('every record handled', () => c.lines.length >= 50, 30_000);
  await new Promise((r) => setTimeout(r, 300)); // many commit intervals, with nothing in flight
  c.proc.kill('SIGKILL');
  await c.exited;
  const bus = await openBus(t, join(dir, 'log'));
  const after: number[] = [];
  await bus.consume<number>({ groupId: 'quiet', topics: [ORDERS], handle: async (r) => void after.push(r.value) });
  await new Promise((r) => setTimeout(r, 300));
  t.same(after, [], 'nothing delivered again after a kill: the last records were committed');
});

t.test('close lets in-flight work finish, then commits it', async (t) => {
  const dir = tempDir(t);
  let bus = await openBus(t, dir);
  await (await bus.producer()).send(SLOW, [{ key: 'a', value: 1 }]);
  let started = false;
  let finished = false;
  await bus.consume<number>({
    groupId: 'slow',
    topics: [SLOW],
    async handle() {
      started = true;
      await new Promise((r) => setTimeout(r, 300));
      finished = true;
    },
  });
  await until('started', () => started);
  await bus.close();
  t.ok(finished, 'the handler finished before close resolved');
  bus = await openBus(t, dir);
  const again: unknown[] = [];
  await bus.consume<number>({ groupId: 'slow', topics: [SLOW], handle: async (r) => void again.push(r.value) });
  await new Promise((r) => setTimeout(r, 300));
  t.same(again, [], 'not delivered again');
});

t.test('a failing handler is retried in place until it passes', async (t) => {
  const bus = await openBus(t, tempDir(t), 1);
  await (await bus.producer()).send(ORDERS, [
    { key: 'a', value: 1 },
    { key: 'a', value: 2 },
  ]);
  const calls: number[] = [];
  await bus.consume<number>({
    groupId: 'flaky',
    topics: [ORDERS],
    async handle(r) {
      calls.push(r.value);
      if (r.value === 1 && calls.filter((v) => v === 1).length < 3) throw new Error('our own fault');
    },
  });
  await until('both handled', () => calls.includes(2), 10_000);
  t.same(
    calls.filter((v) => v === 1),
    [1, 1, 1],
    'retried until it passed',
  );
});

t.test('delayed consumption waits for each record to be due', async (t) => {
  const bus = await openBus(t, tempDir(t));
  const producer = await bus.producer();
  const got: Array<{ r: InRecord<number>; at: number }> = [];
  await bus.consumeDelayed<number>({
    groupId: 'later',
    topics: [SLOW],
    delayMs: () => 400,
    handle: async (r) => void got.push({ r, at: Date.now() }),
  });
  await producer.send(SLOW, [{ key: 'a', value: 1 }]);
  await new Promise((r) => setTimeout(r, 100));
  await producer.send(SLOW, [{ key: 'a', value: 2 }]);
  await until('both', () => got.length === 2);
  for (const { r, at } of got) t.ok(at - r.timestamp >= 400, `record ${r.value} handled ${at - r.timestamp} ms after it was written`);
  t.same(
    got.map((g) => g.r.value),
    [1, 2],
  );
});

t.test('delayed consumption releases records due close together at once, never early', async (t) => {
  const dir = tempDir(t);
  const bus = await openBus(t, dir, 1);
  const producer = await bus.producer();
  const delay = 1000; // a slack of 100 ms (releaseSlackMs)
  const got: Array<{ r: InRecord<number>; at: number }> = [];
  await bus.consumeDelayed<number>({
    groupId: 'spread',
    topics: [SLOW],
    delayMs: () => delay,
    handle: async (r) => void got.push({ r, at: Date.now() }),
  });
  // Ten records 20 ms apart: released one by one, that was ten reads and ten commits.
  for (let i = 1; i <= 10; i++) {
    await producer.send(SLOW, [{ key: 'a', value: i }]);
    await new Promise((r) => setTimeout(r, 20));
  }
  await until('all ten', () => got.length === 10);
  for (const { r, at } of got) t.ok(at - r.timestamp >= delay, `record ${r.value} handled ${at - r.timestamp} ms after it was written`);
  const commits = commitsOf(dir, 'spread');
  t.ok(commits.length <= 5, `released in ${commits.length} commits, not one per record`);
  t.equal(commits.at(-1), 10, 'committed through the last');
});

/** The offsets committed for `group`, in the order they were written to the offsets file. */
function commitsOf(dir: string, group: string): number[] {
  const buf = readFileSync(join(dir, '__consumer_offsets.log'));
  const out: number[] = [];
  for (let pos = 0; pos < buf.length; pos += 8 + buf.readUInt32BE(pos)) {
    const entries = JSON.parse(buf.toString('utf8', pos + 8, pos + 8 + buf.readUInt32BE(pos))) as Array<[string, string, number, number]>;
    for (const [g, , , offset] of entries) if (g === group) out.push(offset);
  }
  return out;
}

/** A one-partition log in a new directory holding records 1..n (one key) in SLOW. */
async function slowRecords(t: Teardown, n: number): Promise<{ dir: string; bus: Bus }> {
  const dir = tempDir(t);
  const bus = await openBus(t, dir, 1);
  await (await bus.producer()).send(
    SLOW,
    Array.from({ length: n }, (_, i) => ({ key: 'a', value: i + 1 })),
  );
  return { dir, bus };
}

/** The group 'tier' consuming SLOW, each record due 100 ms after it was written. */
const consumeTier = (bus: Bus, handle: (r: InRecord<number>) => Promise<void>) =>
  bus.consumeDelayed<number>({ groupId: 'tier', topics: [SLOW], delayMs: () => 100, handle });

t.test('delayed consumption releases the due records together, with one commit', async (t) => {
  const { dir, bus } = await slowRecords(t, 5);
  const got: number[] = [];
  let running = 0;
  let maxRunning = 0;
  await consumeTier(bus, async (r) => {
    maxRunning = Math.max(maxRunning, ++running);
    await new Promise((res) => setTimeout(res, 50));
    running--;
    got.push(r.value);
  });
  await until('all five', () => got.length === 5);
  await until('committed', () => commitsOf(dir, 'tier').length > 0);
  t.equal(maxRunning, 5, 'all five in flight at once');
  t.same(commitsOf(dir, 'tier'), [5], 'one commit, past the last');
});

t.test('a failed delayed record: the commit stops before it, and it and those after it come again', async (t) => {
  let { dir, bus } = await slowRecords(t, 5);
  const calls: number[] = [];
  let failing = true;
  const handle = async (r: InRecord<number>) => {
    calls.push(r.value);
    if (r.value === 3 && failing) throw new Error('our own fault');
  };
  await consumeTier(bus, handle);
  await until('released once', () => calls.length >= 5);
  await until('committed', () => commitsOf(dir, 'tier').length > 0);
  // Closing cuts the retry short: what the restart reads is what was committed.
  await bus.close();
  t.same(calls.slice(0, 5), [1, 2, 3, 4, 5], 'released together, in order');
  t.same(commitsOf(dir, 'tier'), [2], 'committed up to the failed record only');

  calls.length = 0;
  failing = false;
  bus = await openBus(t, dir, 1);
  await consumeTier(bus, handle);
  await until('released again', () => calls.includes(5));
  await until('committed again', () => commitsOf(dir, 'tier').at(-1) === 5);
  t.same(calls, [3, 4, 5], 'from the failed record on: nothing lost (4 and 5 come twice: at least once)');
  t.same(commitsOf(dir, 'tier'), [2, 5]);
});

t.test('a failing delayed record is retried in place, from it on', async (t) => {
  const { dir, bus } = await slowRecords(t, 3);
  const calls: number[] = [];
  await consumeTier(bus, async (r) => {
    calls.push(r.value);
    if (r.value === 2 && calls.filter((v) => v === 2).length < 2) throw new Error('our own fault');
  });
  await until('committed past the last', () => commitsOf(dir, 'tier').at(-1) === 3);
  t.same(calls, [1, 2, 3, 2, 3], 'the failed record and the one after it again, after a backoff');
  t.same(commitsOf(dir, 'tier'), [1, 3]);
});

t.test('bad bytes reach the handler as a decode error with the raw value', async (t) => {
  const bus = await openBus(t, tempDir(t));
  await (await bus.producer()).send(ORDERS, [
    { key: 'a', value: Buffer.from('{not json') },
    { key: 'a', value: { ok: true }, headers: { h: 'v' } },
  ]);
  const got: InRecord<unknown>[] = [];
  await bus.consume({ groupId: 'dlq', topics: [ORDERS], handle: async (r) => void got.push(r) });
  await until('two', () => got.length === 2);
  t.match(got[0], { value: undefined, decodeError: String });
  t.equal(got[0]?.raw?.toString(), '{not json');
  t.match(got[1], { value: { ok: true }, headers: { h: 'v' }, key: 'a' });
});

t.test('a torn tail (an unacknowledged write) is cut off at open; segments roll over', async (t) => {
  const dir = tempDir(t);
  let bus = await createEmbeddedBus({ dir, topicPrefix: 'x.', partitions: 1, log, segmentBytes: 200 });
  await bus.ensureTopics([ORDERS]);
  for (let i = 0; i < 10; i++) await (await bus.producer()).send(ORDERS, [{ key: 'a', value: { i, pad: 'y'.repeat(50) } }]);
  await bus.close();
  const pdir = join(dir, 'x.orders', '0');
  const segments = readdirSync(pdir).sort();
  t.ok(segments.length > 1, `rolled into ${segments.length} segments`);
  appendFileSync(join(pdir, segments.at(-1) as string), Buffer.from([0, 0, 0, 90, 1, 2, 3]));
  bus = await createEmbeddedBus({ dir, topicPrefix: 'x.', partitions: 1, log, segmentBytes: 200 });
  t.teardown(() => bus.close());
  await (await bus.producer()).send(ORDERS, [{ key: 'a', value: { i: 10 } }]);
  const got: Array<{ i: number }> = [];
  const offsets: string[] = [];
  await bus.consume<{ i: number }>({
    groupId: 'g',
    topics: [ORDERS],
    handle: async (r) => {
      got.push(r.value);
      offsets.push(r.offset);
    },
  });
  await until('eleven', () => got.length === 11);
  t.same(
    got.map((v) => v.i),
    [...Array(11).keys()],
  );
  t.same(offsets, [...Array(11).keys()].map(String), 'offsets are contiguous');
});

t.test('one process per directory; one consumer per group', async (t) => {
  const dir = tempDir(t);
  const bus = await openBus(t, dir);
  await t.rejects(createEmbeddedBus({ dir, topicPrefix: 'x.', partitions: 1, log }), /already open in this process/);
  await bus.consume({ groupId: 'one', topics: [ORDERS], handle: async () => {} });
  await t.rejects(bus.consume({ groupId: 'one', topics: [ORDERS], handle: async () => {} }), /already has a consumer/);
  await t.rejects((await bus.producer()).send(topic('nope'), [{ key: 'a', value: 1 }]), /unknown topic/);
  const other = mkdtempSync(join(tmpdir(), 'sy-lock-'));
  t.teardown(() => rmSync(other, { recursive: true, force: true }));
  writeFileSync(join(other, '.lock'), '999999999'); // a dead process
  const lock = lockDirectory(other);
  t.pass('a stale lock is taken over');
  lock.release();
});

t.test('a consumer holds at most maxInFlightBytes of records in flight, across partitions', async (t) => {
  const bus = await openBus(t, tempDir(t));
  const producer = await bus.producer();
  const pad = 'x'.repeat(4000);
  // Spread over every partition, so only the byte budget (not the per-partition limit) binds.
  await producer.send(
    ORDERS,
    Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: { i, pad } })),
  );
  let running = 0;
  let peak = 0;
  let done = 0;
  await bus.consume<{ i: number }>({
    groupId: 'budget',
    topics: [ORDERS],
    concurrency: 20,
    maxInFlightBytes: 10_000,
    async handle() {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 20));
      running--;
      done++;
    },
  });
  await until('every record', () => done === 40);
  // ~4 KB records: starts while under 10 KB in flight, so at most three at once.
  t.ok(peak <= 3, `at most 3 records in flight at once (peak ${peak})`);
  t.ok(peak >= 2, `still concurrent (peak ${peak})`);
});

t.test(
  'a batch consumer gets what every partition holds in one call, each partition in order; a failure reruns partitions alone',
  async (t) => {
    const dir = tempDir(t);
    const bus = await openBus(t, dir);
    const producer = await bus.producer();
    // Keys spread over the four partitions, written before the consumer starts: its first read holds all.
    await producer.send(
      ORDERS,
      Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: i })),
    );
    const calls: InRecord<number>[][] = [];
    let failOnce = true;
    await bus.consume<number>({
      groupId: 'merged',
      topics: [ORDERS],
      handleBatch: async (rs) => {
        calls.push(rs);
        // The first (merged) call fails: each partition's batch is handled again on its own.
        if (failOnce && new Set(rs.map((r) => r.partition)).size > 1) {
          failOnce = false;
          throw new Error('first merged call fails');
        }
      },
    });
    await until('every record handled after the failure', () => !failOnce && calls.slice(1).flat().length >= 40);
    const first = calls[0] as InRecord<number>[];
    t.equal(new Set(first.map((r) => r.partition)).size, 4, 'the first call held all four partitions');
    t.equal(first.length, 40);
    const reruns = calls.slice(1);
    t.ok(
      reruns.every((c) => new Set(c.map((r) => r.partition)).size === 1),
      'after the merged failure each partition was handled alone',
    );
    for (const c of calls) {
      for (const p of new Set(c.map((r) => r.partition))) {
        const offsets = c.filter((r) => r.partition === p).map((r) => Number(r.offset));
        t.same(
          offsets,
          [...offsets].sort((a, b) => a - b),
          `partition ${p} in order`,
        );
      }
    }
    t.same(
      reruns
        .flat()
        .map((r) => r.value)
        .sort((a, b) => a - b),
      Array.from({ length: 40 }, (_, i) => i),
      'each record handled once more, none lost',
    );
  },
);

t.test('retention deletes old segments every group has read, never records one has not', async (t) => {
  const dir = tempDir(t);
  const open = () => createEmbeddedBus({ dir, topicPrefix: 'x.', partitions: 1, log, segmentBytes: 200 });
  const send = async (bus: Bus, from: number, n: number) => {
    for (let i = from; i < from + n; i++) await (await bus.producer()).send(ORDERS, [{ key: 'a', value: { i, pad: 'y'.repeat(50) } }]);
  };
  const readAll = async (bus: Bus, until: number) => {
    const got: number[] = [];
    await bus.consume<{ i: number }>({ groupId: 'g', topics: [ORDERS], handle: async (r) => void got.push(r.value.i) });
    await waitFor('read', () => got.length >= until || undefined);
    return got;
  };
  // Group g reads the first 6 records; 10 more come, unread, while the process is stopped.
  let bus = await open();
  await bus.ensureTopics([ORDERS]);
  await send(bus, 0, 6);
  t.same(await readAll(bus, 6), [0, 1, 2, 3, 4, 5]);
  await bus.close();
  bus = await open();
  await send(bus, 6, 10);
  await bus.close();
  // Stopped for over a week (or restored from a copy that kept its files' times).
  const pdir = join(dir, 'x.orders', '0');
  const before = readdirSync(pdir).filter((f) => f !== 'meta.json');
  const weekAgo = new Date(Date.now() - 8 * 86_400_000);
  for (const f of before) utimesSync(join(pdir, f), weekAgo, weekAgo);

  bus = await open();
  t.teardown(() => bus.close());
  await bus.ensureTopics([ORDERS]);
  const after = readdirSync(pdir).filter((f) => f !== 'meta.json');
  t.ok(after.length < before.length, `segments g had read are deleted (${before.length} -> ${after.length})`);
  t.same(await readAll(bus, 10), [6, 7, 8, 9, 10, 11, 12, 13, 14, 15], 'every record g had not read is there');
});

t.test('a log made with one topic prefix refuses another: its records would wait in the first for ever', async (t) => {
  const dir = tempDir(t);
  const bus = await createEmbeddedBus({ dir, topicPrefix: 'x.', partitions: 1, log });
  await bus.ensureTopics([ORDERS]);
  await (await bus.producer()).send(ORDERS, [{ key: 'a', value: 1 }]);
  await bus.close();
  await t.rejects(
    createEmbeddedBus({ dir, topicPrefix: 'y.', partitions: 1, log }),
    /KAFKA_TOPIC_PREFIX: the log in .* was made with "x\."/,
  );
  const again = await createEmbeddedBus({ dir, topicPrefix: 'x.', partitions: 1, log });
  t.teardown(() => again.close());
  t.pass('its own prefix opens it (the refusal left the lock free)');
});
