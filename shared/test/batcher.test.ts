import t from 'tap';
import { createBatcher, createLingerGate, createSerial } from '../src/batcher.ts';

/** A batcher whose flushes are recorded and answer each item with itself. */
function recording(maxBatch: number, lingerMs: number, lingerUntil?: number) {
  const flushes: number[][] = [];
  const add = createBatcher(
    async (items: number[]) => {
      flushes.push(items);
      return items;
    },
    maxBatch,
    lingerMs,
    lingerUntil,
  );
  return { flushes, add };
}

t.test('a lone call flushes at once; concurrent calls share a flush', async (t) => {
  const flushes: number[][] = [];
  const add = createBatcher(async (items: number[]) => {
    flushes.push(items);
    await new Promise((r) => setTimeout(r, 20));
    return items.map((i) => i * 10);
  });
  t.equal(await add(1), 10);
  const results = await Promise.all([2, 3, 4, 5].map((i) => add(i)));
  t.same(results, [20, 30, 40, 50], 'each caller gets its own result');
  t.same(flushes, [[1], [2], [3, 4, 5]], 'calls made during a flush go out together in the next');
});

t.test('a failed flush fails only its own callers; max batch size is kept', async (t) => {
  let n = 0;
  const add = createBatcher(async (items: number[]) => {
    n++;
    if (items.includes(13)) throw new Error('unlucky');
    return items;
  }, 2);
  const settled = await Promise.allSettled([1, 13, 14, 2, 3].map((i) => add(i)));
  t.same(
    settled.map((s) => s.status),
    ['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled'],
  );
  t.equal(n, 3, '[1], [13, 14], [2, 3]');
});

t.test('with a linger, calls made while nothing runs wait to share one flush', async (t) => {
  const { flushes, add } = recording(10, 30);
  const first = add(1);
  await new Promise((r) => setTimeout(r, 5));
  t.same(flushes, [], 'nothing flushed before the linger ends');
  const second = add(2);
  t.same(await Promise.all([first, second]), [1, 2]);
  t.same(flushes, [[1, 2]], 'both went out together when the linger ended');
});

t.test('a full batch, and calls made during a flush, do not wait for the linger', async (t) => {
  const flushes: number[][] = [];
  let release = (): void => {};
  const add = createBatcher(
    async (items: number[]) => {
      flushes.push(items);
      if (items[0] === 1) await new Promise<void>((r) => (release = r));
      return items;
    },
    3,
    60_000,
  );
  const within = <T>(p: Promise<T>) =>
    Promise.race([p.then(() => 'flushed'), new Promise((r) => setTimeout(() => r('still lingering'), 1000))]);
  const full = Promise.all([1, 2, 3].map((i) => add(i)));
  t.same(flushes, [[1, 2, 3]], 'a full batch is flushed at once');
  const during = Promise.all([4, 5].map((i) => add(i)));
  release();
  t.equal(await within(full), 'flushed');
  t.equal(await within(during), 'flushed', 'calls queued during a flush follow it at once');
  t.same(flushes, [
    [1, 2, 3],
    [4, 5],
  ]);
});

t.test('a linger ends early once lingerUntil calls wait', async (t) => {
  const { flushes, add } = recording(1000, 60_000, 3);
  const two = [add(1), add(2)];
  await new Promise((r) => setImmediate(r));
  t.same(flushes, [], 'two calls keep lingering');
  t.same(await Promise.all([...two, add(3)]), [1, 2, 3], 'the third ends the linger');
  t.same(flushes, [[1, 2, 3]]);
});

t.test('the linger gate shuts after lone lingers and opens again once a trial linger finds company', async (t) => {
  let clock = 0;
  const gate = createLingerGate(() => clock);
  const lone: boolean[] = [];
  for (let i = 0; i < 4; i++) {
    lone.push(gate.open());
    gate.record(false);
  }
  t.same(lone, [true, true, true, true], 'it lingers while the recent lingers mostly found company');
  t.notOk(gate.open(), 'after four lone lingers it shuts');
  clock += 49;
  t.notOk(gate.open(), 'still shut before the first trial is due');
  clock += 1;
  t.ok(gate.open(), 'a trial linger 50 ms on');
  gate.record(false);
  clock += 99;
  t.notOk(gate.open(), 'the next trial waits twice as long');
  clock += 1;
  t.ok(gate.open());
  gate.record(false);
  for (let i = 0; i < 10; i++) {
    clock += 1_000;
    t.ok(gate.open(), 'trials never more than a second apart');
    gate.record(false);
  }
  clock += 1_000;
  gate.record(true);
  t.ok(gate.open(), 'a trial that found company opens it again');
  gate.record(true);
  gate.record(false);
  t.ok(gate.open(), 'one lone linger among company does not shut it');
});

t.test('a caller that waits for each answer stops paying the linger', async (t) => {
  const { flushes, add } = recording(10, 200);
  const waited: boolean[] = [];
  for (let i = 0; i < 12; i++) {
    const at = performance.now();
    await add(i);
    waited.push(performance.now() - at >= 190);
  }
  t.same(waited.slice(0, 4), [true, true, true, true], 'the first calls linger');
  t.ok(waited.filter(Boolean).length <= 5, `the rest go at once, but for one trial at most: ${waited}`);
  t.equal(flushes.length, 12, 'each call its own flush, as before');
});

t.test('a serial runs its calls one at a time, in order; a failure fails only its own call', async (t) => {
  const serial = createSerial();
  const log: string[] = [];
  const step = (name: string, ms: number, fail = false) =>
    serial(async () => {
      log.push(`${name} start`);
      await new Promise((r) => setTimeout(r, ms));
      log.push(`${name} end`);
      if (fail) throw new Error(name);
      return name;
    });
  const outcomes = await Promise.allSettled([step('a', 30), step('b', 10, true), step('c', 0)]);
  t.same(log, ['a start', 'a end', 'b start', 'b end', 'c start', 'c end'], 'no call started before the one ahead settled');
  t.same(
    outcomes.map((o) => (o.status === 'fulfilled' ? o.value : `failed: ${(o.reason as Error).message}`)),
    ['a', 'failed: b', 'c'],
  );
});

t.test('an aborted call still queued is taken back, never flushed; one in a flush is not', async (t) => {
  const flushes: number[][] = [];
  let release = () => {};
  const add = createBatcher(async (items: number[]) => {
    flushes.push(items);
    await new Promise<void>((r) => (release = r));
    return items.map((i) => i * 10);
  });
  const inFlush = new AbortController();
  const queued = new AbortController();
  const first = add(1, inFlush.signal); // flushed at once
  const second = add(2, queued.signal); // queued behind the flush
  const third = add(3);
  const reason = new Error('too late');
  queued.abort(reason);
  inFlush.abort(new Error('ignored'));
  await t.rejects(second, reason, 'rejects at once with the abort reason');
  release();
  t.equal(await first, 10, 'already in a flush: the abort changes nothing');
  await new Promise((r) => setImmediate(r));
  release();
  t.equal(await third, 30);
  t.same(flushes, [[1], [3]], 'the taken-back item is in no flush');
  await t.rejects(add(4, AbortSignal.abort(reason)), reason, 'an aborted signal: refused without queueing');
});
