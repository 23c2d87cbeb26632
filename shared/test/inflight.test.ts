import t from 'tap';
import { KeyedLimiter, OffsetTracker } from '../src/kafka/inflight.ts';

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
