// Ordered delivery against Postgres: what an ordered destination's sender skips as delivered already.
// A router that crashed after writing a batch's deliveries and before committing it routes those
// events again: new delivery records, after the later ones, at offsets past the destination's
// position. Once those events were delivered, the repeats are skipped; a scheduled event's delivery,
// which comes from the retry tiers after later events, is not.
// And a sender killed after a delivery's position was written, before its attempt was: the skipped
// delivery's attempt is written after the restart, stored once (Postgres and the embedded PGlite).
// And a blocked destination's spill drains in the order it was spilled, also when its later records
// came from a lower-numbered partition after deliveries.<type> gained partitions.
// And under a rate limit: deliveries whose turn is far wait in the spill, not in the partition; every
// try from the spill, a retry too, waits for a turn; closing the sender ends a drain's wait for one,
// and a change of the destination (its limit removed) makes it ask again.
import t from 'tap';
import type { Knex } from '@switchyard/shared/db/index.ts';
import { PipelineStore } from '@switchyard/shared/db/stores/pipeline.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { AttemptRecord, DeliveryRecord, RateLimit } from '@switchyard/shared/model/index.ts';
import { type DatabaseKind, openTestDb } from '@switchyard/shared/testing/databases.ts';
import { type Teardown, waitFor } from '@switchyard/shared/testing/index.ts';
import { createOrderedDelivery, type OrderedDelivery, type OrderedDeps } from '../src/controls/ordered.ts';
import { CATCH_UP, createRateGate, gapOf, RateLimiter } from '../src/controls/rate-limit.ts';
import { createOrderedStore } from '../src/controls/ordered-store.ts';
import { createDeliveryHandler, type Handled, type HandlerDeps } from '../src/handler.ts';
import { createDeliveryProgress } from '../src/delivery-progress.ts';
import type { Sender } from '../src/sender.ts';

const destination = {
  id: 'd1',
  tenant_id: 't',
  type: 'webhook' as const,
  config: {},
  credentials: null,
  delivery_metadata: null,
  ordered: true,
};
const TOPIC = 'deliveries.webhook';

/** The delivery of event `n`, which the router read at offset `n` of events partition 2. */
const deliveryOf = (n: number, extra: Partial<DeliveryRecord['event']> = {}): DeliveryRecord => ({
  event: {
    id: `e${n}`,
    tenant_id: 't',
    topic: 'x',
    time: '2026-01-01T00:00:00Z',
    eligible_for_retry: true,
    metadata: null,
    data: { n },
    ...extra,
  },
  destination,
  attempt_number: 1,
  manual: false,
  event_position: { partition: 2, offset: String(n) },
});

/**
 * What the delivery consumer does with one record of a partition (`d` at `offset`): skipped (its
 * step, writing attempts again, run), spilled, or handled and its attempt written.
 */
async function consumeOne(inOrder: OrderedDelivery, offset: number, d: DeliveryRecord, partition = 0): Promise<void> {
  const record = { topic: TOPIC, partition, offset: String(offset), value: d };
  const skipped = await inOrder.skip(d, record);
  if (skipped) return skipped();
  if (await inOrder.spills(record)) return;
  await (await inOrder.deliver(d, undefined, record)).write();
}

/**
 * As consumeOne, with the rate gate between the spill's look and the delivery, as the delivery
 * consumer has it (service.ts): a record whose turn is far goes to the spill there.
 */
async function consumeGated(inOrder: OrderedDelivery, gate: ReturnType<typeof createRateGate>, offset: number, d: DeliveryRecord) {
  const record = { topic: TOPIC, partition: 0, offset: String(offset), value: d };
  const skipped = await inOrder.skip(d, record);
  if (skipped) return skipped();
  if (await inOrder.spills(record)) return;
  if (await gate.parked(d)) return;
  await (await inOrder.deliver(d, undefined, record)).write();
}

/** A drain's turn from `limiter` under `limit` (the gate's `turn`, on a limiter of the test's). */
const turnFrom =
  (limiter: RateLimiter, limit: { per_second?: number; per_minute?: number }) =>
  async (_d: DeliveryRecord, signal?: AbortSignal): Promise<void> => {
    const a = limiter.admit('t\u0000d1', limit, true, undefined, signal);
    if (a && 'go' in a) await a.go;
  };

/** A clock for a limiter that moves only when the test moves it: `tick` wakes the earliest sleeper, at its time. */
function testClock() {
  let now = 0;
  const sleepers: Array<{ at: number; wake: () => void }> = [];
  return {
    now: () => now,
    sleep: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((wake, fail) => {
        const sleeper = { at: now + ms, wake };
        sleepers.push(sleeper);
        signal?.addEventListener('abort', () => {
          sleepers.splice(sleepers.indexOf(sleeper), 1);
          fail(signal.reason);
        });
      }),
    tick(): void {
      sleepers.sort((a, b) => a.at - b.at);
      const next = sleepers.shift();
      if (!next) return;
      now = Math.max(now, next.at);
      next.wake();
    },
  };
}

const spillSize = async (db: Knex) => Number((await db('ordered_spill').count<{ count: string }[]>('* as count'))[0]?.count);

/** A handler over a webhook sender that answers with `deliver`; `deps` replaces the defaults. */
function handlerOver(deliver: Sender['deliver'], deps: Partial<HandlerDeps> = {}) {
  return createDeliveryHandler({
    senders: { webhook: { deliver, close: async () => {} } },
    open: () => ({ credentials: {}, delivery_metadata: {} }),
    emitAttempt: async () => {},
    scheduleRetry: async () => {},
    retry: { schedule: [], intervalSeconds: 1, maxRetries: 3, maxRetryAfterMs: 60_000 },
    timeoutMs: 1000,
    ...deps,
  });
}

/** Ordered delivery over `handle` and `db`'s ordered store; nothing canceled unless `deps` says. */
function orderedOver(db: Knex, handle: OrderedDeps['handle'], deps: Partial<OrderedDeps> = {}) {
  return createOrderedDelivery({
    handle,
    turn: async () => {},
    written: () => {},
    emit: async () => {},
    canceled: async () => false,
    store: createOrderedStore(db),
    types: ['webhook'],
    log: createLogger('test', 'silent'),
    progress: createDeliveryProgress(db, createLogger('test', 'silent')),
    ...deps,
  });
}

t.test('an event routed again after a router crash is not delivered again; a due scheduled one is', async (t) => {
  const db = await openTestDb(t, 'Postgres');
  const sent: number[] = [];
  const handle = handlerOver(async ({ event }) => {
    sent.push((event.data as { n: number }).n);
    return { status: 'success', code: '200', response_data: null, retryable: false };
  });
  const make = () => orderedOver(db, handle);
  let inOrder = make();
  t.teardown(() => inOrder.close());
  const consume = (offset: number, d: DeliveryRecord) => consumeOne(inOrder, offset, d);

  // 17, 18, 19, then 17 and 18 routed again (new records, after 19).
  await consume(100, deliveryOf(17));
  await consume(101, deliveryOf(18));
  await consume(102, deliveryOf(19));
  await consume(103, deliveryOf(17));
  await consume(104, deliveryOf(18));
  t.same(sent, [17, 18, 19], 'the repeats are skipped');

  // The same, known from Postgres only (another process, or after a restart).
  await inOrder.close();
  inOrder = make();
  await consume(105, deliveryOf(18));
  t.same(sent, [17, 18, 19], 'skipped by the stored position too');

  // A scheduled event published before 19, due now: delivered, and it moves nothing back.
  await consume(106, deliveryOf(15, { deliver_at: '2026-01-01T00:00:01Z' }));
  t.same(sent, [17, 18, 19, 15], 'the due scheduled delivery is made');
  await consume(107, deliveryOf(19));
  await consume(108, deliveryOf(20));
  t.same(sent, [17, 18, 19, 15, 20], 'a repeat of 19 is still skipped after it; 20 goes');

  // A delivery without the event's place (routed before it was written) is never skipped by it.
  const legacy = deliveryOf(16);
  delete legacy.event_position;
  await consume(109, legacy);
  t.same(sent, [17, 18, 19, 15, 20, 16], 'a delivery without it goes by its record alone');
});

/**
 * A sender process over `db`: the attempts topic is the attempts service's store itself (what it
 * would write them with), and `down` makes writing to it fail, as a process killed before the
 * attempt left it. `fail(n, attempt)` says whether event `n`'s try fails (retryable); `gate` holds
 * one try until released.
 */
function senderOver(db: Knex, fail: (n: number, attempt: number) => boolean = () => false) {
  const attempts = new PipelineStore(db);
  const sent: number[] = [];
  const made: AttemptRecord[] = [];
  const io = { down: false, gate: null as Promise<void> | null };
  const emit = async (a: AttemptRecord) => {
    if (io.down) throw new Error('the process was killed before its attempt was written');
    await attempts.storeAttempts([a]);
  };
  const base = handlerOver(
    async ({ event }) => {
      const n = (event.data as { n: number }).n;
      const tries = sent.filter((x) => x === n).length + 1;
      if (io.gate) await io.gate;
      sent.push(n);
      return fail(n, tries)
        ? { status: 'failed', code: '500', response_data: null, retryable: true }
        : { status: 'success', code: '200', response_data: { n }, retryable: false };
    },
    { emitAttempt: emit, retry: { schedule: [0.05], intervalSeconds: 1, maxRetries: 3, maxRetryAfterMs: 60_000 } },
  );
  const handle = async (d: DeliveryRecord, trace?: Record<string, string>, inPlace?: boolean): Promise<Handled> => {
    const h = await base(d, trace, inPlace);
    made.push(h.attempt);
    return h;
  };
  const start = (store = createOrderedStore(db)) => orderedOver(db, handle, { emit, store });
  return { sent, made, io, start };
}

/** The attempts stored for event `n`: id, status and number, in number order. */
const storedOf = async (db: Knex, n: number) =>
  (await db('attempts')
    .where({ event_id: `e${n}` })
    .orderBy('attempt_number')
    .select('id', 'status', 'attempt_number', 'final')) as Array<{
    id: string;
    status: string;
    attempt_number: number;
    final: boolean;
  }>;

const savedAttempts = async (db: Knex) => {
  const row = (await db('ordered_positions').where({ tenant_id: 't', destination_id: 'd1' }).first('offset', 'attempts')) as {
    offset: string | number;
    attempts: string | null;
  };
  return { offset: Number(row.offset), ids: (JSON.parse(row.attempts ?? '[]') as AttemptRecord[]).map((a) => a.id) };
};

for (const name of ['Postgres', 'PGlite'] as const) {
  t.test(
    `${name}: a kill after a direct delivery's position was written, before its attempt: written after the restart, once`,
    async (t) => {
      const db = await openTestDb(t, name);
      const p = senderOver(db);
      let inOrder = p.start();
      t.teardown(() => inOrder.close());
      const consume = (offset: number, n: number) => consumeOne(inOrder, offset, deliveryOf(n));

      await consume(100, 1);
      // Killed: 2 and 3 are delivered and their positions written, their attempts never leave.
      p.io.down = true;
      await t.rejects(consume(101, 2), /killed/);
      await t.rejects(consume(102, 3), /killed/);
      await inOrder.close();
      t.same(await storedOf(db, 2), [], 'no attempt of 2 stored before the restart');
      const [a2, a3] = [p.made[1] as AttemptRecord, p.made[2] as AttemptRecord];
      t.same(await savedAttempts(db), { offset: 102, ids: [a2.id, a3.id] }, 'the position holds both unwritten attempts');

      // Restarted: the records from the last committed offset come again, all skipped.
      p.io.down = false;
      inOrder = p.start();
      for (const [offset, n] of [
        [100, 1],
        [101, 2],
        [102, 3],
      ] as const)
        await consume(offset, n);
      t.same(p.sent, [1, 2, 3], 'nothing delivered again');
      for (const [n, a] of [
        [2, a2],
        [3, a3],
      ] as const)
        t.same(
          await storedOf(db, n),
          [{ id: a.id, status: 'success', attempt_number: 1, final: true }],
          `the attempt of ${n}, its own id, once`,
        );

      // Killed again before the offsets were committed: written once more, still stored once.
      await inOrder.close();
      inOrder = p.start();
      await consume(101, 2);
      await consume(102, 3);
      t.equal((await storedOf(db, 2)).length, 1, 'a repeated attempt is stored once');
      t.equal((await storedOf(db, 3)).length, 1);
      t.equal((await storedOf(db, 1)).length, 1, 'the one written before the kill is not repeated');

      await consume(103, 4);
      t.same(p.sent, [1, 2, 3, 4], 'the next one goes');
      t.same(await savedAttempts(db), { offset: 103, ids: [(p.made[3] as AttemptRecord).id] }, 'acknowledged attempts are not carried on');
      t.equal((await storedOf(db, 4)).length, 1);

      // An earlier attempt acknowledged while the next position is written is not carried on after it.
      await inOrder.close();
      const store = createOrderedStore(db);
      let meanwhile: (() => Promise<void>) | null = null;
      inOrder = p.start({
        ...store,
        async ended(d, at, attempts) {
          await store.ended(d, at, attempts);
          await meanwhile?.();
        },
      });
      const first = { topic: TOPIC, partition: 0, offset: '104', value: deliveryOf(5) };
      t.equal(await inOrder.skip(first.value, first), null);
      const h5 = await inOrder.deliver(first.value, undefined, first);
      meanwhile = h5.write;
      await consume(105, 6);
      meanwhile = null;
      await consume(106, 7);
      t.same(await savedAttempts(db), { offset: 106, ids: [(p.made.at(-1) as AttemptRecord).id] }, 'only the last one, written since');
      t.same(p.sent, [1, 2, 3, 4, 5, 6, 7]);
    },
  );

  t.test(
    `${name}: a kill after a drained delivery's position was written, before its attempt: written after the restart, once`,
    async (t) => {
      const db = await openTestDb(t, name);
      // Event 5 fails its first try: it and 6 go to the spill, and its second try comes from the drain.
      const p = senderOver(db, (n, attempt) => n === 5 && attempt === 1);
      let inOrder = p.start();
      t.teardown(() => inOrder.close());
      const consume = (offset: number, n: number) => consumeOne(inOrder, offset, deliveryOf(n));
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      await consume(200, 5);
      // The drain's retry waits until the attempts topic is gone.
      p.io.gate = held;
      await consume(201, 6);
      p.io.down = true;
      release();
      await waitFor('the position of 5 written', async () => (await savedAttempts(db).catch(() => ({ offset: 0 }))).offset === 200);
      await inOrder.close();
      p.io.gate = null;
      t.same(p.sent, [5, 5], 'the retry of 5 succeeded, 6 waits behind it');
      t.same(
        (await storedOf(db, 5)).map((a) => a.status),
        ['failed'],
        'only the failed try of 5 stored before the restart',
      );
      const retried = p.made[1] as AttemptRecord;
      t.same(await savedAttempts(db), { offset: 200, ids: [retried.id] }, 'the position holds its unwritten attempt');

      // Restarted: the spill's drain finds 5 delivered, writes its attempt, then delivers 6.
      p.io.down = false;
      inOrder = p.start();
      await waitFor('the attempt of 6', async () => (await storedOf(db, 6)).length === 1);
      t.same(p.sent, [5, 5, 6], '5 not delivered again; 6 after it');
      t.same(
        await storedOf(db, 5),
        [
          { id: (p.made[0] as AttemptRecord).id, status: 'failed', attempt_number: 1, final: false },
          { id: retried.id, status: 'success', attempt_number: 2, final: true },
        ],
        'both tries of 5 stored once each, the final one with its own id',
      );
      t.same(await db('ordered_spill').count<{ count: string }[]>('* as count'), [{ count: '0' }], 'the spill is empty');
    },
  );

  t.test(`${name}: after deliveries.<type> grew, a blocked destination's spill drains in the order it was spilled`, async (t) => {
    const db = await openTestDb(t, name);
    // 5 fails its first try in partition 3 and its retry is held: 6 is spilled behind it. The topic
    // then gains partitions and the destination's key lands in partition 1: 7 and 8 come from there.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const p = senderOver(db, (n, attempt) => {
      if (n !== 5 || attempt !== 1) return false;
      p.io.gate = held;
      return true;
    });
    const inOrder = p.start();
    t.teardown(() => inOrder.close());
    await consumeOne(inOrder, 500, deliveryOf(5), 3);
    await consumeOne(inOrder, 501, deliveryOf(6), 3);
    await consumeOne(inOrder, 40, deliveryOf(7), 1);
    await consumeOne(inOrder, 41, deliveryOf(8), 1);
    t.same(p.sent, [5], 'all behind the blocked 5');
    release();
    await waitFor('the attempt of 8', async () => (await storedOf(db, 8)).length === 1);
    t.same(p.sent, [5, 5, 6, 7, 8], 'the retry of 5, then 6, then the ones from the lower partition');
    for (const n of [6, 7, 8])
      t.same(
        (await storedOf(db, n)).map((a) => a.status),
        ['success'],
        `${n} delivered once`,
      );
    t.same(await db('ordered_spill').count<{ count: string }[]>('* as count'), [{ count: '0' }], 'the spill is empty');
  });

  t.test(
    `${name}: deliveries whose rate-limit turn is far wait in the spill, not in the partition; made in order at the limit`,
    async (t) => {
      const db = await openTestDb(t, name);
      const limit = { per_second: 2 };
      const limited = { ...destination, rate_limit: limit };
      // The limiter's clock moves only when the test moves it: however long the database takes, the
      // turns after the first are 550 ms (of that clock) away, beyond the hold.
      const clock = testClock();
      const limiter = new RateLimiter({ now: clock.now, sleep: clock.sleep });
      const starts: Array<{ n: number; at: number }> = [];
      const handle = handlerOver(async ({ event }) => {
        starts.push({ n: (event.data as { n: number }).n, at: clock.now() });
        return { status: 'success', code: '200', response_data: null, retryable: false };
      });
      const gate = createRateGate({
        limiter,
        current: (s) => ({ destination: s }),
        park: async () => {
          throw new Error("an ordered destination's delivery is never parked");
        },
        spill: (d) => inOrder.spillUntilTurn(d),
      });
      const inOrder: OrderedDelivery = orderedOver(db, handle, { turn: turnFrom(limiter, limit) });
      t.teardown(() => {
        gate.close();
        return inOrder.close();
      });
      const dOf = (n: number): DeliveryRecord => ({ ...deliveryOf(n), destination: limited });

      // The clock standing still, a record that waited for its turn in the partition would never be done.
      const consumed = (async () => {
        for (let n = 1; n <= 4; n++) await consumeGated(inOrder, gate, 600 + n, dOf(n));
        return true;
      })();
      let timer: NodeJS.Timeout | undefined;
      const done = await Promise.race([consumed, new Promise<false>((resolve) => (timer = setTimeout(resolve, 20_000, false)))]);
      clearTimeout(timer);
      t.ok(done, 'the four records done with, none waiting for its turn in the partition');
      if (!done) return;
      t.same(
        starts.map((s) => s.n),
        [1],
        'the first made at once; the others wait for their turns',
      );
      t.equal(await spillSize(db), 3, 'in the spill');
      // The drain waits for their turns: the clock moved to each.
      await waitFor('all four made', () => {
        clock.tick();
        return starts.length === 4;
      });
      t.same(
        starts.map((s) => s.n),
        [1, 2, 3, 4],
        'in order',
      );
      for (let i = 1; i < starts.length; i++)
        t.ok(
          (starts[i] as { at: number }).at - (starts[i - 1] as { at: number }).at >= gapOf(limit) * CATCH_UP,
          `${i + 1} started a turn after ${i}`,
        );
      await waitFor('the spill emptied', async () => (await spillSize(db)) === 0);
      // Read again after a crash: skipped, as delivered already.
      await consumeGated(inOrder, gate, 602, dOf(2));
      t.equal(starts.length, 4, 'a record made from the spill is not made again');
    },
  );

  t.test(`${name}: a retry from the spill waits for a turn, and the next delivery for the one after`, async (t) => {
    const db = await openTestDb(t, name);
    const limit = { per_second: 1 };
    const starts: Array<{ n: number; at: number }> = [];
    const handle = handlerOver(
      async ({ event }) => {
        const n = (event.data as { n: number }).n;
        const first = !starts.some((s) => s.n === n);
        starts.push({ n, at: performance.now() });
        return n === 1 && first
          ? { status: 'failed', code: '503', response_data: null, retryable: true }
          : { status: 'success', code: '200', response_data: null, retryable: false };
      },
      // The retry of 1 more than a turn after its first try: no wait for its own turn.
      { retry: { schedule: [1.5], intervalSeconds: 1, maxRetries: 3, maxRetryAfterMs: 60_000 } },
    );
    const inOrder = orderedOver(db, handle, { turn: turnFrom(new RateLimiter(), limit) });
    t.teardown(() => inOrder.close());
    await consumeOne(inOrder, 700, deliveryOf(1));
    await consumeOne(inOrder, 701, deliveryOf(2));
    await waitFor('2 made after the retry of 1', () => starts.length === 3, 30_000);
    t.same(
      starts.map((s) => s.n),
      [1, 1, 2],
    );
    const [retry, next] = [starts[1] as { at: number }, starts[2] as { at: number }];
    t.ok(next.at - retry.at >= gapOf(limit) * CATCH_UP, `2 started a turn after the retry of 1 (${Math.round(next.at - retry.at)} ms)`);
  });

  t.test(`${name}: closing the sender ends a drain's wait for a turn; the delivery stays in the spill`, async (t) => {
    const { db, limiter, inOrder, sent } = await drainAwaitingTurn(t, name, 800, () => ({ per_minute: 1 }));
    const closing = performance.now();
    await inOrder.close();
    t.ok(performance.now() - closing < 30_000, `closed without waiting for the turn (${Math.round(performance.now() - closing)} ms)`);
    t.equal(limiter.waiting(), 0, 'the turn given up');
    t.same(sent, [1], 'the retry not made');
    t.equal(await spillSize(db), 1, 'the delivery stays in the spill');
  });

  t.test(`${name}: a limit removed while a drain waits for a turn: the wait ends, the retry is made`, async (t) => {
    let limit: RateLimit | null = { per_minute: 1 };
    const { db, inOrder, sent } = await drainAwaitingTurn(t, name, 900, () => limit);
    const removed = performance.now();
    limit = null;
    inOrder.changed({ tenant_id: 't', destination_id: 'd1' });
    await waitFor('the retry made', () => sent.length === 2, 30_000);
    t.ok(performance.now() - removed < 30_000, `made ${Math.round(performance.now() - removed)} ms after, not at the turn a minute on`);
    await waitFor('the spill drained', async () => (await spillSize(db)) === 0);
  });
}

/**
 * A drain waiting for a rate-limit turn a minute away: delivery 1 (at `offset`) failed and its
 * retry waits for the destination's next turn under `limitNow()` (read at each turn, as the gate
 * reads the current limit), the turn before just taken. The retry, once made, succeeds.
 */
async function drainAwaitingTurn(t: Teardown, name: DatabaseKind, offset: number, limitNow: () => RateLimit | null) {
  const db = await openTestDb(t, name);
  const limiter = new RateLimiter();
  const taken = limiter.admit('t\u0000d1', limitNow(), true);
  if (taken && 'go' in taken) await taken.go;
  const sent: number[] = [];
  const handle = handlerOver(
    async ({ event }) => {
      sent.push((event.data as { n: number }).n);
      return sent.length === 1
        ? { status: 'failed', code: '503', response_data: null, retryable: true }
        : { status: 'success', code: '200', response_data: null, retryable: false };
    },
    { retry: { schedule: [0.05], intervalSeconds: 1, maxRetries: 3, maxRetryAfterMs: 60_000 } },
  );
  const turn = async (_d: DeliveryRecord, signal?: AbortSignal) => {
    const a = limiter.admit('t\u0000d1', limitNow(), true, undefined, signal);
    if (a && 'go' in a) await a.go;
  };
  const inOrder = orderedOver(db, handle, { turn });
  t.teardown(() => inOrder.close());
  await consumeOne(inOrder, offset, deliveryOf(1));
  await waitFor("the drain waiting for the retry's turn", () => limiter.waiting() === 1);
  return { db, limiter, inOrder, sent };
}

/** A handler whose event 1 fails its first `failures` tries (each retried after 0.2 s), every other try succeeding; and the attempts it writes. */
function oneFailsFirst(failures: number) {
  const attempts: AttemptRecord[] = [];
  let tries = 0;
  const handle = handlerOver(
    async ({ event }) =>
      (event.data as { n: number }).n === 1 && ++tries <= failures
        ? { status: 'failed', code: '503', response_data: null, retryable: true }
        : { status: 'success', code: '200', response_data: null, retryable: false },
    {
      emitAttempt: async (a) => {
        attempts.push(a);
      },
      retry: { schedule: Array(failures).fill(0.2), intervalSeconds: 1, maxRetries: 3, maxRetryAfterMs: 60_000 },
    },
  );
  return { handle, attempts };
}

t.test('a manual retry of the blocked event, made from the spill, is numbered after its tries there', async (t) => {
  const db = await openTestDb(t, 'Postgres');
  // 1 fails twice, then succeeds; every other try succeeds.
  const { handle, attempts } = oneFailsFirst(2);
  // The drain notes its tries where a manual retry's number is handed out (delivery-progress.ts).
  const inOrder = orderedOver(db, handle);
  t.teardown(() => inOrder.close());
  await consumeOne(inOrder, 400, deliveryOf(1));
  // Asked for while 1 blocks, numbered as the gateway numbers it then: after the one attempt stored.
  await consumeOne(inOrder, 401, { ...deliveryOf(1), attempt_number: 2, manual: true });
  await waitFor('the manual retry made', () => attempts.filter((a) => a.status === 'success').length === 2);
  t.same(
    attempts.map((a) => [a.event_id, a.attempt_number, a.manual, a.status]),
    [
      ['e1', 1, false, 'failed'],
      ['e1', 2, false, 'failed'],
      ['e1', 3, false, 'success'],
      ['e1', 4, true, 'success'],
    ],
    'the manual one after the tries made in the drain before it, not a second 2',
  );
});

t.test('the drain notes the tries of a delivery that failed, not the first tries that end one', async (t) => {
  const db = await openTestDb(t, 'Postgres');
  // 1 fails once, then succeeds; 2, spilled behind it, succeeds at its first try.
  const { handle, attempts } = oneFailsFirst(1);
  const progress = createDeliveryProgress(db, createLogger('test', 'silent'));
  const inOrder = orderedOver(db, handle, { progress });
  t.teardown(() => inOrder.close());
  await consumeOne(inOrder, 500, deliveryOf(1));
  await consumeOne(inOrder, 501, deliveryOf(2));
  await waitFor('both delivered', () => attempts.filter((a) => a.status === 'success').length === 2);
  const none = { superseded: false, attempts: 0 };
  t.equal(progress.after(deliveryOf(1), none), 2, "1's retry, tried in the drain, is remembered");
  t.equal(progress.after(deliveryOf(2), none), 0, "2's first try is not: nothing counts past it");
});

t.test('a blocked delivery whose destination is deleted is canceled at once, not at its next try', async (t) => {
  const db = await openTestDb(t, 'Postgres');
  const sent: number[] = [];
  const attempts: AttemptRecord[] = [];
  let deleted = false;
  let looked = 0;
  const handle = handlerOver(
    async ({ event }) => {
      sent.push((event.data as { n: number }).n);
      return { status: 'failed', code: '503', response_data: null, retryable: true };
    },
    {
      current: async (s) => (deleted ? { canceled: 'destination_deleted' } : { destination: s }),
      emitAttempt: async (a) => {
        attempts.push(a);
      },
      // The next try an hour away: only the change can end the wait within the test.
      retry: { schedule: [3600], intervalSeconds: 1, maxRetries: 3, maxRetryAfterMs: 60_000 },
    },
  );
  const inOrder = orderedOver(db, handle, {
    canceled: async () => {
      looked++;
      return deleted;
    },
  });
  t.teardown(() => inOrder.close());
  await consumeOne(inOrder, 300, deliveryOf(1));
  await consumeOne(inOrder, 301, deliveryOf(2));
  t.same(sent, [1], '2 waits behind the blocked 1');
  await waitFor('the drain waiting for the next try of 1', () => looked === 1);

  // Changed without being deleted (a new URL, say): still waits for its try.
  inOrder.changed({ tenant_id: 't', destination_id: 'd1' });
  await waitFor('the change looked at', () => looked === 2);
  inOrder.changed({ tenant_id: 't', destination_id: 'other' });
  t.equal(looked, 2, "another destination's change is not looked at");
  t.same(sent, [1]);

  deleted = true;
  inOrder.changed({ tenant_id: 't', destination_id: null });
  await waitFor('both canceled', () => attempts.filter((a) => a.status === 'canceled').length === 2);
  t.same(
    attempts.map((a) => [a.event_id, a.attempt_number, a.status]),
    [
      ['e1', 1, 'failed'],
      ['e1', 2, 'canceled'],
      ['e2', 1, 'canceled'],
    ],
  );
  t.same(sent, [1], 'nothing more sent');
  await waitFor(
    'the spill emptied',
    async () => Number((await db('ordered_spill').count<{ count: string }[]>('* as count'))[0]?.count) === 0,
  );
});
