import t from 'tap';
import { gapOf, HOLD_MS, RateLimiter, SLACK_MS } from '../src/controls/rate-limit.ts';

/** A limiter on a clock the test moves: `run` fires the sleepers in time order until none is left. */
function onClock() {
  let now = 0;
  const sleepers: Array<{ at: number; wake: () => void }> = [];
  const limiter = new RateLimiter({
    now: () => now,
    sleep: (ms) => new Promise<void>((wake) => sleepers.push({ at: now + ms, wake })),
  });
  const settle = () => new Promise((r) => setImmediate(r));
  return {
    limiter,
    at: () => now,
    advance: (ms: number) => (now += ms),
    async run(): Promise<void> {
      await settle();
      while (sleepers.length) {
        sleepers.sort((a, b) => a.at - b.at);
        const next = sleepers.shift() as { at: number; wake: () => void };
        now = Math.max(now, next.at);
        next.wake();
        await settle();
      }
    },
  };
}

t.test('the gap is the stricter limit, stretched by the slack', async (t) => {
  t.equal(gapOf(null), 0);
  t.equal(gapOf(undefined), 0);
  t.equal(gapOf({ per_second: 10 }), (1000 + SLACK_MS) / 10);
  t.equal(gapOf({ per_minute: 60 }), (60_000 + SLACK_MS) / 60);
  t.equal(gapOf({ per_second: 100, per_minute: 60 }), (60_000 + SLACK_MS) / 60, 'per minute stricter');
});

t.test('no limit: admitted at once, nothing kept', async (t) => {
  const { limiter } = onClock();
  t.equal(limiter.admit('a', null), null);
  t.notOk(limiter.knows('a'));
});

t.test('deliveries start a gap apart; beyond the hold they are parked, spread a gap apart', async (t) => {
  const { limiter, at, run } = onClock();
  const limit = { per_second: 10 };
  const gap = gapOf(limit);
  const starts: number[] = [];
  const parks: number[] = [];
  const pending: Promise<void>[] = [];
  for (let i = 0; i < 20; i++) {
    const a = limiter.admit('a', limit);
    if (!a) throw new Error('a limited destination is always admitted through the limiter');
    if ('go' in a) pending.push(a.go.then(() => void starts.push(at())));
    else parks.push(a.parkMs);
  }
  await run();
  await Promise.all(pending);
  const held = Math.floor(HOLD_MS / gap) + 1;
  t.equal(starts.length, held, 'those due within the hold wait');
  for (let i = 1; i < starts.length; i++) t.ok((starts[i] as number) - (starts[i - 1] as number) >= gap - 1e-9, 'a gap apart');
  t.equal(parks.length, 20 - held, 'the rest are parked');
  for (let i = 1; i < parks.length; i++) t.ok((parks[i] as number) - (parks[i - 1] as number) >= Math.floor(gap), 'parked turns spread');
  t.ok((parks[0] as number) > HOLD_MS, 'the first parked one is due after the hold');
  t.equal(limiter.waiting(), 0);
});

t.test('a pause does not bunch starts: each is checked against the last real one', async (t) => {
  let now = 0;
  const timers: Array<() => void> = [];
  const limiter = new RateLimiter({ now: () => now, sleep: () => new Promise<void>((r) => timers.push(r)) });
  const limit = { per_second: 10 };
  const gap = gapOf(limit);
  const starts: number[] = [];
  const [first, second, third] = [limiter.admit('a', limit), limiter.admit('a', limit), limiter.admit('a', limit)];
  if (!first || !second || !third || !('go' in first) || !('go' in second) || !('go' in third)) throw new Error('all held');
  const done = Promise.all([first, second, third].map((a) => a.go.then(() => void starts.push(now))));
  await new Promise((r) => setImmediate(r));
  t.same(starts, [0], 'the first at once');
  // The process paused past both other turns: the third's wake finds the second just started.
  now = 1000;
  for (const wake of timers.splice(0)) wake();
  await new Promise((r) => setImmediate(r));
  t.same(starts, [0, 1000], 'only one more started after the pause');
  now += gap;
  for (const wake of timers.splice(0)) wake();
  await done;
  t.same(starts, [0, 1000, 1000 + gap], 'the next a gap later');
});

t.test('a removed limit frees the destination; idle destinations are forgotten', async (t) => {
  const { limiter, advance, run } = onClock();
  const a = limiter.admit('a', { per_second: 1 });
  if (!a || !('go' in a)) throw new Error('held');
  await run();
  await a.go;
  t.ok(limiter.knows('a'));
  t.equal(limiter.admit('a', null), null, 'no limit any more: at once');
  t.notOk(limiter.knows('a'));
  const b = limiter.admit('b', { per_second: 1 });
  if (!b || !('go' in b)) throw new Error('held');
  await run();
  await b.go;
  advance(10_000);
  limiter.sweep(5_000);
  t.notOk(limiter.knows('b'));
});
