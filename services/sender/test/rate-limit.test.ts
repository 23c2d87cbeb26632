import t from 'tap';
import { metrics } from '@switchyard/shared/metrics.ts';
import type { DeliveryRecord, DestinationSnapshot } from '@switchyard/shared/model/index.ts';
import { maxInWindow, waitFor } from '@switchyard/shared/testing/index.ts';
import { CATCH_UP, createRateGate, gapOf, HOLD_MS, MIN_PARK_MS, RateLimiter, SLACK_MS, TURN_LEAD_MS } from '../src/controls/rate-limit.ts';

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
    /** Resolves `ms` later on the test's clock (a parked delivery's trip through the tiers). */
    sleep: (ms: number) => new Promise<void>((wake) => sleepers.push({ at: now + ms, wake })),
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
  t.ok((parks[0] as number) >= MIN_PARK_MS, 'and no sooner than the shortest tier brings it back');
  t.equal(limiter.waiting(), 0);
});

t.test('a delivery parked for the shortest park waits exactly that long, at any clock reading', async (t) => {
  // At 2896.1 ms, (now + 1200) - now is 1200.0000000000005 in floating point: rounded up, 1201.
  const now = 2896.1;
  const limiter = new RateLimiter({ now: () => now, sleep: () => new Promise<void>(() => {}) });
  const limit = { per_second: 1 };
  t.match(limiter.admit('a', limit), { go: Promise }, 'the first goes at once');
  t.same(limiter.admit('a', limit), { parkMs: MIN_PARK_MS }, 'the next, whose turn is within it, parks for the shortest park');
});

t.test('a pause does not bunch starts: each is checked against the real ones before it', async (t) => {
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
  now += gap * CATCH_UP;
  for (const wake of timers.splice(0)) wake();
  await done;
  t.same(starts, [0, 1000, 1000 + gap * CATCH_UP], 'the next sooner than a gap: late turns are made up, within the window');
});

t.test('made-up turns never put more than the limit in a window of a second and the slack', async (t) => {
  let now = 0;
  const timers: Array<() => void> = [];
  const limiter = new RateLimiter({ now: () => now, sleep: () => new Promise<void>((r) => timers.push(r)) });
  const limit = { per_second: 10 };
  const starts: number[] = [];
  const back: Array<{ at: number; turn: number }> = [];
  const offer = (turn?: number) => {
    const a = limiter.admit('a', limit, false, turn === undefined ? undefined : turn - now);
    if (!a) throw new Error('limited');
    if ('go' in a) void a.go.then(() => void starts.push(now));
    else back.push({ at: now + a.parkMs - TURN_LEAD_MS, turn: now + a.parkMs });
  };
  // Offered at twice the limit for 20 s, parked ones back for their turns; the clock steps 5 ms at
  // a time and every timer fires late (every 35 ms).
  for (let step = 0; step < 6000; step++) {
    now += 5;
    if (step < 4000 && step % 10 === 0) offer();
    for (const b of back.splice(0)) {
      if (b.at <= now) offer(b.turn);
      else back.push(b);
    }
    if (step % 7 === 0) for (const wake of timers.splice(0)) wake();
    await new Promise((r) => setImmediate(r));
  }
  t.ok(starts.length >= 0.9 * 272, `${starts.length} started in 30 s (the limit allows 272 a gap apart): late timers made up`);
  t.ok(maxInWindow(starts, 1000 + SLACK_MS) <= 10, `at most 10 in any 1.1 s (saw ${maxInWindow(starts, 1000 + SLACK_MS)})`);
  t.ok(minSpacing(starts) >= gapOf(limit) * CATCH_UP - 1e-9, `never closer than ${CATCH_UP} of a gap (${minSpacing(starts)})`);
});

const minSpacing = (times: number[]) => {
  const sorted = [...times].sort((a, b) => a - b);
  let min = Number.POSITIVE_INFINITY;
  for (let i = 1; i < sorted.length; i++) min = Math.min(min, (sorted[i] as number) - (sorted[i - 1] as number));
  return min;
};

/**
 * A backlog of `n` offered at the times `arrivals` gives (ms), each parked delivery released by the
 * retry scheduler TURN_LEAD_MS before it is due and back `transit(i)` ms after that (produced, read,
 * queued behind its key), as the sender offers them, under the limit `limitAt` gives at the time:
 * the real starts, the deliveries in the order they started, and how often each was parked.
 */
async function drain(
  n: number,
  arrivals: (i: number) => number,
  transit: (i: number) => number,
  limitAt: (ms: number) => { per_second: number } = () => ({ per_second: 10 }),
) {
  const c = onClock();
  const starts: number[] = [];
  const order: number[] = [];
  const parksOf = new Array<number>(n).fill(0);
  const offer = async (i: number, turnAt?: number): Promise<void> => {
    const a = c.limiter.admit('a', limitAt(c.at()), false, turnAt === undefined ? undefined : turnAt - c.at());
    if (!a) throw new Error('a limited destination is always admitted through the limiter');
    if ('go' in a) {
      await a.go;
      starts.push(c.at());
      order.push(i);
      return;
    }
    parksOf[i] = (parksOf[i] as number) + 1;
    // As the sender's gate: parked again for its turn, it keeps the turn it carries.
    const turn = a.turnKept && turnAt !== undefined ? turnAt : c.at() + a.parkMs;
    await c.sleep(a.parkMs - TURN_LEAD_MS + transit(i));
    await offer(i, turn);
  };
  const all: Promise<void>[] = [];
  for (let i = 0; i < n; i++) all.push(c.sleep(arrivals(i)).then(() => offer(i)));
  await c.run();
  await Promise.all(all);
  starts.sort((a, b) => a - b);
  return { starts, order, parksOf, gap: gapOf(limitAt(0)) };
}

t.test('a parked backlog drains at the limit: each delivery keeps its turn and is parked once', async (t) => {
  // 150 at once; each parked one back 0 to 380 ms after its release (up to 80 ms after its turn).
  const { starts, parksOf, gap } = await drain(
    150,
    () => 0,
    (i) => (i * 37) % 380,
  );
  t.equal(starts.length, 150, 'every delivery started');
  t.ok(maxInWindow(starts, 1000 + SLACK_MS) <= 10, 'at most the limit in any second and the slack');
  t.ok(minSpacing(starts) >= gap * CATCH_UP - 1e-9, 'never closer than the catch-up spacing');
  const span = (starts.at(-1) as number) - (starts[0] as number);
  // The turns between the hold and the soonest park go unused once: the rest run a gap apart.
  t.ok(span <= 149 * gap + MIN_PARK_MS + 100, `drained in ${span} ms (a gap apart: ${149 * gap})`);
  t.ok(
    parksOf.every((p) => p <= 1),
    'none parked twice',
  );
});

t.test('offered five times the limit for three seconds, some back late: drained close to the limit', async (t) => {
  // A few back as late as 500 ms after their turn, in a bunch.
  const { starts, parksOf, gap } = await drain(
    150,
    (i) => Math.floor(i / 50) * 1000,
    (i) => (i % 40 < 5 ? 800 : (i * 53) % 300),
  );
  t.equal(starts.length, 150);
  t.ok(maxInWindow(starts, 1000 + SLACK_MS) <= 10, 'at most the limit in any second and the slack');
  t.ok(minSpacing(starts) >= gap * CATCH_UP - 1e-9, 'never closer than the catch-up spacing');
  const span = (starts.at(-1) as number) - (starts[0] as number);
  t.ok(span <= 149 * gap + MIN_PARK_MS + 1000, `drained in ${span} ms (a gap apart: ${149 * gap})`);
  t.ok(
    parksOf.filter((p) => p > 1).length <= 15,
    `few parked twice (${parksOf.filter((p) => p > 1).length}): only those back so late that others fill the hold`,
  );
});

t.test('a limit lowered while a backlog is parked: drained in the order it came, at the new limit', async (t) => {
  // 60 at once under 10/s; at 1.5 s the limit is 2/s; 10 more come at 2 s.
  const lowered = 1500;
  const { starts, order } = await drain(
    70,
    (i) => (i < 60 ? 0 : 2000),
    (i) => (i * 37) % 250,
    (ms) => ({ per_second: ms < lowered ? 10 : 2 }),
  );
  t.same(
    order,
    Array.from({ length: 70 }, (_, i) => i),
    'every delivery started in the order it came',
  );
  const after = starts.filter((s) => s >= lowered + HOLD_MS);
  t.ok(after.length > 50, `${after.length} started after the change took hold`);
  t.ok(maxInWindow(after, 1000 + SLACK_MS) <= 2, `at most 2 in any 1.1 s once lowered (saw ${maxInWindow(after, 1000 + SLACK_MS)})`);
});

t.test('a limit raised while a backlog is parked: the backlog keeps its turns, later deliveries come after it', async (t) => {
  const { order } = await drain(
    40,
    (i) => (i < 30 ? 0 : 2000),
    (i) => (i * 37) % 250,
    (ms) => ({ per_second: ms < 1500 ? 2 : 10 }),
  );
  t.same(
    order,
    Array.from({ length: 40 }, (_, i) => i),
    'every delivery started in the order it came',
  );
});

t.test('a parked delivery back early is parked again for its turn; one back far too late takes a new turn', async (t) => {
  const { limiter } = onClock();
  const limit = { per_second: 10 };
  const early = limiter.admit('a', limit, false, 2000);
  t.same(early, { parkMs: 2000, turnKept: true }, 'early: parked until its turn, the turn kept');
  // Others fill the hold: one back late queues behind them only as far as the hold allows.
  for (let i = 0; i < 5; i++) limiter.admit('a', limit);
  const late = limiter.admit('a', limit, false, -3000);
  t.ok(late && 'parkMs' in late && late.parkMs >= MIN_PARK_MS, 'too far behind: parked for a new turn');
});

// The gate the sender runs before each delivery (service.ts), on the real clock: limits of a few a
// second, so that a turn is either due at once, within the hold or beyond it.

/** A delivery to `destination` (webhook `d` of tenant `t` with `extra`), as the router made it. */
const deliveryTo = (extra: Partial<DestinationSnapshot> = {}): DeliveryRecord => ({
  event: { id: 'e1', tenant_id: 't', topic: 'x', time: '2026-01-01T00:00:00Z', eligible_for_retry: true, metadata: null, data: {} },
  destination: { id: 'd', tenant_id: 't', type: 'webhook', config: {}, credentials: null, delivery_metadata: null, ...extra },
  attempt_number: 1,
  manual: false,
});

/** A gate over the destination as it is now (`now`: the snapshot changed by it), recording what it parks and spills. */
function gateOver(t: { teardown(fn: () => unknown): void }, now: Partial<DestinationSnapshot> = {}, spills = true) {
  const parked: DeliveryRecord[] = [];
  const spilled: DeliveryRecord[] = [];
  const gate = createRateGate({
    current: (s) => ({ destination: { ...s, ...now } }),
    park: async (d) => {
      parked.push(d);
    },
    spill: async (d) => {
      if (!spills) return false;
      spilled.push(d);
      return true;
    },
  });
  t.teardown(() => gate.close());
  return { gate, parked, spilled };
}

const waitedCount = async () =>
  (await metrics.rateLimited.get()).values.find((v) => v.labels.type === 'webhook' && v.labels.outcome === 'waited')?.value ?? 0;

t.test('a limit set after a delivery was routed applies to it: the current limit is read', async (t) => {
  // Routed before the PATCH: its snapshot has no limit (a backlog, a retry in the tiers, a scheduled event).
  const { gate, parked } = gateOver(t, { rate_limit: { per_second: 1 } });
  const routed = deliveryTo();
  t.equal(await gate.parked(routed), false, 'the first goes at once');
  t.equal(await gate.parked(routed), true, 'the next, its turn 1.1 s on, is parked for it');
  t.equal(await gate.parked(routed), true, 'and the one after');
  t.equal(parked.length, 2);
  const turns = parked.map((d) => Date.parse(d.turn_at as string));
  t.ok((turns[1] as number) - (turns[0] as number) >= gapOf({ per_second: 1 }) - 1, 'a gap apart');
});

t.test("a canceled delivery takes no turn, and leaves its destination's turns as they were", async (t) => {
  // Canceled: the scheduled event of `gone` (its state read through the delivery), or a deleted destination.
  const limit = { per_second: 1 };
  const gone = new Set<DeliveryRecord>();
  const parked: DeliveryRecord[] = [];
  const gate = createRateGate({
    current: (s, d) => (gone.has(d) ? { canceled: 'event_canceled' } : { destination: { ...s, rate_limit: limit } }),
    park: async (d) => {
      parked.push(d);
    },
  });
  t.teardown(() => gate.close());
  t.equal(await gate.parked(deliveryTo()), false, 'the first goes at once');
  const canceled = Array.from({ length: 5 }, () => deliveryTo());
  for (const d of canceled) gone.add(d);
  for (const d of canceled) t.equal(await gate.parked(d), false, 'a canceled one passes at once (the handler records it canceled)');
  // A turn is a timer; a canceled one returns without one, before any timer could fire.
  let turned = false;
  const turn = gate.turn(canceled[0] as DeliveryRecord).then(() => (turned = true));
  await new Promise((r) => setImmediate(r));
  t.ok(turned, "nor does it wait for a turn in an ordered destination's drain");
  await turn;
  t.same(parked, [], 'none parked');
  t.equal(await gate.parked(deliveryTo()), true, 'the next live one is parked for the turn after the first');
  const turnIn = Date.parse(parked[0]?.turn_at as string) - Date.now();
  t.ok(turnIn <= MIN_PARK_MS, `its turn the soonest a parked one gets (${turnIn} ms), not behind five canceled ones`);
});

t.test('only a delivery that waited for its turn is counted as waited', async (t) => {
  const { gate } = gateOver(t);
  // 220 ms apart: within the hold.
  const limited = deliveryTo({ rate_limit: { per_second: 5 } });
  const before = await waitedCount();
  t.equal(await gate.parked(limited), false);
  t.equal(await waitedCount(), before, 'its turn had come: not counted');
  t.equal(await gate.parked(limited), false, 'the next waits for its turn');
  t.equal(await waitedCount(), before + 1, 'counted');
  t.equal(await gate.parked(deliveryTo({ id: 'free' })), false);
  t.equal(await waitedCount(), before + 1, 'a destination without a limit is not counted');
});

t.test("an ordered destination's delivery: a near turn waited for, a far one in its spill with no turn taken", async (t) => {
  const limit = { per_second: 1 };
  const { gate, parked, spilled } = gateOver(t);
  const ordered = deliveryTo({ ordered: true, rate_limit: limit });
  t.equal(await gate.parked(ordered), false, 'the first goes at once');
  t.equal(await gate.parked(ordered), true, 'the next, its turn 1.1 s away, is done with: in its spill');
  t.equal(await gate.parked(ordered), true, 'and the one after');
  t.same(spilled.length, 2, 'both spilled');
  t.same(parked, [], 'never parked in the tiers');
  const next = gate.limiter.near('t\u0000d', limit);
  t.ok(next && 'laterMs' in next && next.laterMs <= gapOf(limit), 'the spilled ones took no turn: the next is still a gap after the first');
  t.equal(gate.limiter.waiting(), 0, 'none waits here');
});

t.test("an ordered destination's delivery that cannot go to a spill waits for its turn", async (t) => {
  const { gate, spilled } = gateOver(t, {}, false);
  const ordered = deliveryTo({ ordered: true, rate_limit: { per_second: 1 } });
  t.equal(await gate.parked(ordered), false);
  const started = performance.now();
  t.equal(await gate.parked(ordered), false, 'made after its wait');
  t.ok(performance.now() - started >= gapOf({ per_second: 1 }) * CATCH_UP, 'at its turn');
  t.same(spilled.length, 0);
});

t.test("a drain's turn waits however far, and ends when told to", async (t) => {
  const { gate } = gateOver(t);
  const ordered = deliveryTo({ ordered: true, rate_limit: { per_minute: 1 } });
  await gate.turn(ordered);
  const stop = new AbortController();
  const next = gate.turn(ordered, stop.signal);
  await waitFor('the next waiting for its turn a minute on', () => gate.limiter.waiting() === 1);
  stop.abort(new Error('the sender is closing'));
  await t.rejects(next, 'ends when told to');
  t.equal(gate.limiter.waiting(), 0, 'its turn given up');
});
