import t from 'tap';
import { ByteBudget } from '../src/bus/byte-budget.ts';
import { createKeyedDispatch, DIVERTED, type KeyedDispatchOptions, KeyedLimiter, retryInPlace } from '../src/bus/inflight.ts';
import { type Teardown, waitFor } from '../src/testing/index.ts';
import { OffsetTracker } from '../src/bus/offset-tracker.ts';

/**
 * A keyed dispatch as these tests use it, closed at `t`'s teardown: 10 records in flight a
 * partition, a stalled key keeps no backlog, and (unless given) untilDone runs the task once.
 */
function testDispatch<R extends { key: string }>(
  t: Teardown,
  o: Omit<KeyedDispatchOptions<R>, 'concurrency' | 'keyBacklog' | 'untilDone'> & Partial<Pick<KeyedDispatchOptions<R>, 'untilDone'>>,
) {
  const dispatch = createKeyedDispatch<R>({
    concurrency: 10,
    keyBacklog: 0,
    async untilDone(what) {
      await what();
      return true;
    },
    ...o,
  });
  t.teardown(() => dispatch.close());
  return dispatch;
}

t.test('commits below the lowest unfinished offset', async (t) => {
  const tr = new OffsetTracker();
  t.equal(tr.committable(), null, 'nothing to commit before any record');
  for (const o of [10, 11, 12, 13]) tr.start(String(o));
  t.equal(tr.committable(), '10');
  tr.finish('12');
  tr.finish('11');
  t.equal(tr.committable(), '10', '10 still running holds the commit');
  t.equal(tr.inFlight, 2, 'records finished behind a running one no longer count as in flight');
  tr.finish('10');
  t.equal(tr.committable(), '13', 'done up to 12');
  tr.finish('13');
  t.equal(tr.committable(), '14', 'all done: the next offset');
  t.equal(tr.inFlight, 0);
  t.ok(tr.seen('12'));
  t.notOk(tr.seen('14'));
  t.throws(() => tr.start('5'), 'offsets must increase');
});

t.test('gaps in offsets (compaction, transactions) are fine', async (t) => {
  const tr = new OffsetTracker();
  tr.start('100');
  tr.start('105');
  tr.finish('105');
  t.equal(tr.committable(), '100');
  tr.finish('100');
  t.equal(tr.committable(), '106');
});

t.test('a keyed limiter caps concurrency per key and keeps order', async (t) => {
  const lim = new KeyedLimiter(2);
  const running = new Map<string, number>();
  let maxSlow = 0;
  const order: number[] = [];
  const gates: Array<() => void> = [];
  const task = (key: string, i: number, hang: boolean) =>
    lim.run(key, async () => {
      running.set(key, (running.get(key) ?? 0) + 1);
      if (key === 'slow') maxSlow = Math.max(maxSlow, running.get(key) ?? 0);
      if (hang) await new Promise<void>((r) => gates.push(r));
      order.push(i);
      running.set(key, (running.get(key) ?? 1) - 1);
    });
  const slow = [0, 1, 2, 3].map((i) => task('slow', i, true));
  const fast = [10, 11, 12].map((i) => task('fast', i, false));
  await Promise.all(fast);
  t.same(order, [10, 11, 12], 'a hanging key does not hold up another key');
  t.equal(lim.queued('slow'), 2, 'two slow tasks wait');
  while (gates.length) {
    (gates.shift() as () => void)();
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(slow);
  t.equal(maxSlow, 2, 'never more than two at once for one key');
  t.same(order.slice(3), [0, 1, 2, 3], 'a key runs in arrival order');
});

const tick = () => new Promise((r) => setImmediate(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a key is stalled once its oldest running task reaches stallMs, not while it keeps up', async (t) => {
  // A busy key that keeps up: a long queue of tasks that each finish at once, never stalled (a
  // task of a few ms on a timer can take over 50 on a busy machine: these take a turn of the loop).
  const busy = new KeyedLimiter(2, { stallMs: 1000 });
  let maxStalled = 0;
  await Promise.all(
    Array.from({ length: 500 }, () =>
      busy.run('busy', async () => {
        maxStalled = Math.max(maxStalled, busy.stalledFor('busy'));
        await tick();
      }),
    ),
  );
  t.equal(maxStalled, 0, 'a key that keeps up is never stalled, however long its queue');
  const lim = new KeyedLimiter(2, { stallMs: 50 });
  let release = () => {};
  const hang = lim.run('hang', () => new Promise<void>((r) => (release = r)));
  t.equal(lim.stalledFor('hang'), 0, 'not yet');
  await sleep(70);
  t.ok(lim.stalledFor('hang') >= 50, 'stalled once the oldest running task is older than stallMs');
  release();
  await hang;
  t.equal(lim.stalledFor('hang'), 0, 'no longer stalled once it finished (no slowMs set)');
});

t.test("a task's clock restarted after a wait counts toward stallMs and slowMs from then on", async (t) => {
  const lim = new KeyedLimiter(2, { stallMs: 40, slowMs: 40 });
  let release = () => {};
  let restarted = () => {};
  const ran = lim.run('k', async (clock) => {
    await sleep(60); // waiting for something else than its key (a rate-limit turn)
    clock.restart();
    restarted();
    await new Promise<void>((r) => (release = r));
  });
  await new Promise<void>((r) => (restarted = r));
  t.equal(lim.stalledFor('k'), 0, 'not stalled right after the restart, though it started 60 ms ago');
  await sleep(60);
  t.ok(lim.stalledFor('k') >= 40, 'stalled once it ran stallMs after the restart');
  release();
  await ran;
  t.ok(lim.stalledFor('k') > 0, 'slow: it ran slowMs after the restart');
  await lim.run('k', async (clock) => {
    await sleep(60);
    clock.restart();
  });
  t.equal(lim.stalledFor('k'), 0, 'a task that waited 60 ms and then finished at once is in time: the key recovers');
});

t.test('a task that ran into slowMs leaves its key one slot until a task finishes in time', async (t) => {
  const lim = new KeyedLimiter(4, { slowMs: 40 });
  await lim.run('k', () => sleep(50));
  t.ok(lim.stalledFor('k') > 0, 'slow after a task took slowMs');
  let running = 0;
  let max = 0;
  const gates: Array<() => void> = [];
  const tasks = [0, 1, 2].map(() =>
    lim.run('k', async () => {
      max = Math.max(max, ++running);
      await new Promise<void>((r) => gates.push(r));
      running--;
    }),
  );
  await tick();
  t.equal(max, 1, 'one slot while slow');
  t.equal(lim.queued('k'), 2);
  (gates.shift() as () => void)(); // finishes fast: the key recovers its four slots
  await tick();
  await tick();
  t.equal(running, 2, 'both waiting tasks start once a task finished in time');
  for (const g of gates.splice(0)) g();
  await Promise.all(tasks);
  t.equal(lim.stalledFor('k'), 0, 'healthy again');
});

t.test('divertStalled takes waiting tasks of stalled keys off the queue, keeping the oldest `keep`', async (t) => {
  const lim = new KeyedLimiter(1, { stallMs: 30 });
  let release = () => {};
  const first = lim.run('hang', () => new Promise<void>((r) => (release = r)));
  const waiting = [1, 2, 3, 4].map((i) => lim.run('hang', async () => i));
  const healthy = lim.run('ok', async () => 'ok');
  t.equal(lim.divertStalled(0), 0, 'nothing is diverted before the key stalls');
  await sleep(40);
  t.equal(lim.divertStalled(1), 3, 'three taken, the oldest kept');
  t.equal(lim.queued('hang'), 1);
  release();
  await first;
  t.same(await Promise.all(waiting), [1, DIVERTED, DIVERTED, DIVERTED], 'the kept task runs; the others are DIVERTED without running');
  t.equal(await healthy, 'ok', 'another key is untouched');
});

t.test('keyed dispatch: a stalled key diverts at once and from its queue; every record settles exactly once', async (t) => {
  const handled: string[] = [];
  const diverted: Array<{ id: string; stalledMs: number }> = [];
  const settled = new Map<string, boolean[]>();
  let release = () => {};
  // Long enough that the steps before the stall check take less on a busy machine.
  const stallMs = 300;
  const dispatch = testDispatch<{ key: string; id: string }>(t, {
    keyConcurrency: 1,
    health: { stallMs },
    async handle(r) {
      if (r.id === 'h0') await new Promise<void>((res) => (release = res));
      handled.push(r.id);
    },
    async divert(r, stalledMs) {
      diverted.push({ id: r.id, stalledMs });
    },
  });
  const finished: Promise<void>[] = [];
  const start = async (key: string, id: string) =>
    finished.push((await dispatch.start({ key, id }, (done) => settled.set(id, [...(settled.get(id) ?? []), done]))).finished);
  await start('hang', 'h0');
  t.notOk(dispatch.sweeping, 'no stall sweep while no record waits for a slot');
  await start('hang', 'h1'); // queued before the key stalls
  t.ok(dispatch.sweeping, 'the sweep runs once a record waits');
  await start('ok', 'o1');
  t.equal(dispatch.divertsNow('hang'), 0, 'a busy key that has not stalled is not diverted');
  // Stalled once h0 has run stallMs: the sweep takes h1 off the queue, and stops once none waits.
  await waitFor('the sweep to divert h1', () => diverted.some((d) => d.id === 'h1'));
  await waitFor('the sweep to stop, though h0 still hangs', () => !dispatch.sweeping);
  t.ok(dispatch.divertsNow('hang') >= stallMs, 'a stalled key with no free slot is diverted, and says for how long');
  t.equal(dispatch.divertsNow('ok'), 0, 'a healthy key is not');
  t.equal(dispatch.divertsNow('unknown'), 0, 'nor a key the consumer holds nothing of');
  await start('hang', 'h2'); // diverted at once
  await start('ok', 'o2');
  release();
  await Promise.all(finished);
  t.equal(dispatch.divertsNow('hang'), 0, 'a free slot: not diverted');
  await start('hang', 'h3'); // a free slot: runs, stalled or not
  await Promise.all(finished);
  t.notOk(dispatch.sweeping, 'an idle dispatch keeps no timer');
  t.same(handled.sort(), ['h0', 'h3', 'o1', 'o2'], 'the stalled key ran only what had a free slot; the healthy key ran everything');
  t.same(diverted.map((d) => d.id).sort(), ['h1', 'h2'], 'queued and new records of the stalled key were diverted');
  t.ok(
    diverted.every((d) => d.stalledMs >= stallMs),
    'divert is told how long the key has been stalled',
  );
  t.same(
    [...settled.entries()].sort(),
    ['h0', 'h1', 'h2', 'h3', 'o1', 'o2'].map((id) => [id, [true]]),
    'each record settled once, as done',
  );
});

t.test('keyed dispatch: an ordered key runs one record at a time, in order, and is never diverted however stalled', async (t) => {
  const started: string[] = [];
  const diverted: string[] = [];
  const releases = new Map<string, () => void>();
  const dispatch = testDispatch<{ key: string; id: string; ordered: boolean }>(t, {
    keyConcurrency: 4,
    health: { stallMs: 20 },
    ordered: (r) => r.ordered,
    async handle(r) {
      started.push(r.id);
      if (r.key === 'ord') await new Promise<void>((res) => releases.set(r.id, res));
    },
    async divert(r) {
      diverted.push(r.id);
    },
  });
  const finished: Promise<void>[] = [];
  for (const id of ['a', 'b', 'c']) finished.push((await dispatch.start({ key: 'ord', id, ordered: true }, () => {})).finished);
  finished.push((await dispatch.start({ key: 'free', id: 'f1', ordered: false }, () => {})).finished);
  await sleep(80); // long past stallMs: an unordered key would have its queue diverted now
  t.equal(dispatch.divertsNow('ord'), 0, 'an ordered key is never diverted');
  finished.push((await dispatch.start({ key: 'ord', id: 'd', ordered: true }, () => {})).finished);
  t.same(
    started.filter((id) => id !== 'f1'),
    ['a'],
    'one at a time, though the key may run four',
  );
  for (const id of ['a', 'b', 'c', 'd']) {
    await waitUntil(() => releases.has(id));
    (releases.get(id) as () => void)();
  }
  await Promise.all(finished);
  t.same(
    started.filter((id) => id !== 'f1'),
    ['a', 'b', 'c', 'd'],
    'in arrival order',
  );
  t.same(diverted, [], 'nothing diverted');
});

/** Two tenants' records under one record key (a destination id both chose), told apart by their dispatch key. */
interface TenantRecord {
  key: string;
  tenant: string;
  id: string;
  ordered?: boolean;
}
const byTenant = (r: TenantRecord) => `${r.tenant}\u0000${r.key}`;

t.test("keyed dispatch: one tenant's ordered key does not make another's of the same record key wait", async (t) => {
  const started: string[] = [];
  const releases = new Map<string, () => void>();
  const dispatch = testDispatch<TenantRecord>(t, {
    keyConcurrency: 4,
    health: { stallMs: 20 },
    ordered: (r) => r.ordered === true,
    dispatchKey: byTenant,
    async handle(r) {
      started.push(r.id);
      if (r.tenant === 'a') await new Promise<void>((res) => releases.set(r.id, res));
    },
    async divert() {},
  });
  const finished: Promise<void>[] = [];
  for (const id of ['a1', 'a2'])
    finished.push((await dispatch.start({ key: 'default', tenant: 'a', id, ordered: true }, () => {})).finished);
  const bDone = [];
  for (const id of ['b1', 'b2', 'b3']) bDone.push((await dispatch.start({ key: 'default', tenant: 'b', id }, () => {})).finished);
  await Promise.race([Promise.all(bDone), sleep(1000)]);
  t.same(started, ['a1', 'b1', 'b2', 'b3'], "b's records ran at once, a's second waits for its first");
  t.ok(dispatch.limiter.pinned('a\u0000default'), "a's key is pinned");
  t.notOk(dispatch.limiter.pinned('b\u0000default'), "b's is not");
  for (const id of ['a1', 'a2']) {
    await waitUntil(() => releases.has(id));
    (releases.get(id) as () => void)();
  }
  await Promise.all([...finished, ...bDone]);
  t.same(started, ['a1', 'b1', 'b2', 'b3', 'a2'], "a's in order, one at a time");
});

t.test("keyed dispatch: one tenant's stalled key diverts none of another's of the same record key", async (t) => {
  const handled: string[] = [];
  const diverted: string[] = [];
  let release = () => {};
  const dispatch = testDispatch<TenantRecord>(t, {
    keyConcurrency: 1,
    health: { stallMs: 20 },
    dispatchKey: byTenant,
    async handle(r) {
      if (r.id === 'a1') await new Promise<void>((res) => (release = res));
      handled.push(r.id);
    },
    async divert(r) {
      diverted.push(r.id);
    },
  });
  const finished: Promise<void>[] = [];
  const start = async (tenant: string, id: string) =>
    finished.push((await dispatch.start({ key: 'default', tenant, id }, () => {})).finished);
  await start('a', 'a1');
  await sleep(40); // a's key stalls
  t.ok(dispatch.divertsNow('a\u0000default') >= 20, "a's key is stalled, by its dispatch key");
  t.equal(dispatch.divertsNow('b\u0000default'), 0, "b's is not");
  t.equal(dispatch.divertsNow('default'), 0, 'nor is the record key a dispatch key');
  await start('a', 'a2'); // diverted at once
  await start('b', 'b1');
  await start('b', 'b2');
  await waitUntil(() => handled.length >= 2, 1000);
  t.same(handled, ['b1', 'b2'], "b's records ran, one after another, while a's first hangs");
  release();
  await Promise.all(finished);
  t.same(diverted, ['a2'], "only a's record was diverted");
});

t.test("keyed dispatch: a handler's AfterKey runs with the key's slot free, and the record is done only after it", async (t) => {
  const handled: string[] = [];
  const afterRuns: string[] = [];
  const settled: string[] = [];
  let openGate = () => {};
  const gate = new Promise<void>((res) => (openGate = res));
  let failOnce = true;
  const dispatch = testDispatch<{ key: string; id: string }>(t, {
    keyConcurrency: 1,
    health: {},
    async handle(r) {
      handled.push(r.id);
      return async () => {
        afterRuns.push(r.id);
        if (r.id === 'a1') {
          await gate;
          if (failOnce) {
            failOnce = false;
            throw new Error('kafka away');
          }
        }
      };
    },
    async untilDone(what) {
      for (;;) {
        try {
          await what();
          return true;
        } catch {
          // retried in place, as the buses do
        }
      }
    },
  });
  const first = await dispatch.start({ key: 'k', id: 'a1' }, () => settled.push('a1'));
  const second = await dispatch.start({ key: 'k', id: 'a2' }, () => settled.push('a2'));
  await second.finished;
  t.same(handled, ['a1', 'a2'], "the key's next record ran while the first one's AfterKey was still waiting");
  t.same(settled, ['a2'], 'the first record is not done while its AfterKey waits');
  openGate();
  await first.finished;
  t.same(settled, ['a2', 'a1'], 'done once its AfterKey passed');
  t.same(afterRuns, ['a1', 'a2', 'a1'], 'a failed AfterKey is run again alone');
  t.same(handled, ['a1', 'a2'], 'the handler itself is not run again');
});

t.test('keyed dispatch: a record diverted at once holds up neither the records behind it nor their commit', async (t) => {
  let releaseHang = () => {};
  let releaseWrite = () => {};
  const dispatch = testDispatch<{ key: string; offset: string }>(t, {
    keyConcurrency: 1,
    health: { stallMs: 20 },
    async handle(r) {
      if (r.key === 'hang') await new Promise<void>((res) => (releaseHang = res));
    },
    // The hand-off's write, waiting (as a lingering produce would) until released.
    divert: () => new Promise<void>((res) => (releaseWrite = res)),
  });
  const partition = { tracker: new OffsetTracker(), waiters: [] as Array<() => void> };
  const inflight = new Set<Promise<void>>();
  await dispatch.run({ key: 'hang', offset: '0' }, partition, inflight);
  await sleep(40); // the key stalls
  await dispatch.run({ key: 'hang', offset: '1' }, partition, inflight); // diverted at once
  // Resolved while the hand-off is still being written: the next record starts without waiting.
  await dispatch.run({ key: 'ok', offset: '2' }, partition, inflight);
  await sleep(5);
  t.equal(partition.tracker.inFlight, 2, 'the hanging record and the one being handed off hold their slots');
  releaseHang();
  await sleep(5);
  t.equal(partition.tracker.committable(), '1', 'not committed past the record being handed off');
  releaseWrite();
  await Promise.all(inflight);
  t.equal(partition.tracker.inFlight, 0);
  t.equal(partition.tracker.committable(), '3', 'committed through every record once the hand-off is written');
});

t.test('keyed dispatch: an idle slow key still lets one record through to find out whether it recovered', async (t) => {
  const dispatch = testDispatch<{ key: string }>(t, {
    keyConcurrency: 4,
    health: { stallMs: 1000, slowMs: 20 },
    handle: async () => {
      await sleep(30);
    },
    async divert() {},
  });
  await (await dispatch.start({ key: 'k' }, () => {})).finished;
  t.ok(dispatch.limiter.stalledFor('k') > 0, 'the key is slow after a task took slowMs');
  t.equal(dispatch.divertsNow('k'), 0, 'idle: its next record is not diverted');
  const probe = await dispatch.start({ key: 'k' }, () => {});
  t.ok(dispatch.divertsNow('k') > 0, 'while that one runs, the next would be');
  await probe.finished;
});

t.test('a byte budget is full at its maximum, yet one record always fits', async (t) => {
  const b = new ByteBudget(100);
  t.notOk(b.full, 'empty');
  b.take(500);
  t.ok(b.full, 'one record larger than the budget: full after it');
  b.give(500);
  t.notOk(b.full, 'empty again: the next record fits whatever its size');
  b.take(60);
  t.notOk(b.full, 'under the maximum');
  b.take(40);
  t.ok(b.full, 'at the maximum');
  let woken = false;
  const freed = b.freed().then(() => (woken = true));
  t.notOk(woken);
  b.give(60);
  await freed;
  t.ok(woken, 'waiters are woken when bytes are given back');
  t.equal(b.inUse, 40);
});

t.test('tryTake admits what fits, and anything when the budget is empty', async (t) => {
  const b = new ByteBudget(100);
  t.ok(b.tryTake(500), 'empty: one item of any size fits');
  t.notOk(b.tryTake(1), 'nothing more while it is held');
  t.equal(b.inUse, 500, 'a refused take takes nothing');
  b.give(500);
  t.ok(b.tryTake(60));
  t.ok(b.tryTake(40), 'exactly up to the maximum');
  t.notOk(b.tryTake(1), 'past the maximum');
  t.equal(b.inUse, 100);
});

t.test("keyed dispatch takes a record's bytes from the budget until it settles", async (t) => {
  const releases: Array<() => void> = [];
  const dispatch = testDispatch<{ key: string; id: string }>(t, {
    keyConcurrency: 10,
    health: {},
    maxInFlightBytes: 1000,
    handle: () => new Promise<void>((res) => releases.push(res)),
  });
  const partition = { tracker: new OffsetTracker(), waiters: [] as Array<() => void> };
  const inflight = new Set<Promise<void>>();
  await dispatch.run({ key: 'a', id: '1', offset: '0' }, partition, inflight, 600);
  t.notOk(dispatch.budget.full);
  await dispatch.run({ key: 'a', id: '2', offset: '1' }, partition, inflight, 600);
  t.ok(dispatch.budget.full, '1,200 bytes in flight: full');
  t.notOk(dispatch.hasRoom(partition), 'no room for another record while the budget is full');
  const room = dispatch.roomFreed(partition);
  t.equal(dispatch.budget.inUse, 1200);
  (releases.shift() as () => void)();
  await new Promise((r) => setImmediate(r));
  t.equal(dispatch.budget.inUse, 600, 'a finished record gives its bytes back');
  await room;
  t.ok(dispatch.hasRoom(partition), 'room again, and the waiter was woken');
  (releases.shift() as () => void)();
  await Promise.all([...inflight]);
  t.equal(dispatch.budget.inUse, 0);
});

t.test('retryInPlace retries with growing waits until it passes, and stops when told', async (t) => {
  const waits: number[] = [];
  const failures: number[] = [];
  let calls = 0;
  const passed = await retryInPlace(
    async () => {
      if (++calls < 4) throw new Error('not yet');
    },
    { stopped: () => false, wait: async (ms) => void waits.push(ms), failed: (_err, attempt) => void failures.push(attempt) },
  );
  t.ok(passed);
  t.equal(calls, 4);
  t.same(waits, [200, 400, 800], 'doubling waits between tries');
  t.same(failures, [0, 1, 2]);
  let stop = false;
  const stopped = await retryInPlace(
    async () => {
      throw new Error('never');
    },
    {
      stopped: () => stop,
      wait: async () => {
        stop = true;
      },
      failed: () => {},
    },
  );
  t.notOk(stopped, 'false once closing interrupts it');
});

/** Waits until `ok`; false when it is still not after `ms`. */
async function waitUntil(ok: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) return false;
    await sleep(5);
  }
  return true;
}
