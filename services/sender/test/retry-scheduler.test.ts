// The retry tiers: where a retry or a parked delivery waits, and what happens when it comes out.
import t from 'tap';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { TURN_LEAD_MS } from '../src/controls/rate-limit.ts';
import { createRetryScheduler } from '../src/retry-scheduler.ts';
import { deliveryRecord } from './records.ts';

const delivery = deliveryRecord({ attempt_number: 2 });

function scheduler(at: { now: number }, stalledHere?: (d: DeliveryRecord) => number) {
  const parked: Array<{ tier: number; due_at?: string; record: DeliveryRecord }> = [];
  const delivered: DeliveryRecord[] = [];
  const s = createRetryScheduler({
    deliver: async (d) => void delivered.push(d),
    park: async (d, tier) => void parked.push({ tier, due_at: d.due_at, record: d }),
    ...(stalledHere ? { stalledHere } : {}),
    now: () => at.now,
  });
  return { s, parked, delivered };
}

t.test('parking takes exactly one tier: the longest not longer than asked, at least the shortest', async (t) => {
  const at = { now: Date.parse('2026-01-01T00:00:00Z') };
  const { s, parked, delivered } = scheduler(at);
  for (const wanted of [1, 999, 1000, 4999, 5000, 29_999, 30_000]) await s.park(delivery, wanted);
  t.same(
    parked.map((p) => p.tier),
    [0, 0, 0, 0, 1, 1, 2],
    'tiers 1 s, 5 s, 30 s',
  );
  t.same(
    parked.map((p) => Date.parse(p.due_at ?? '') - at.now),
    [1000, 1000, 1000, 1000, 5000, 5000, 30_000],
    'due exactly when the tier releases it',
  );
  // Released by its tier once the delay passed: straight back to the delivery topic, no second hop.
  at.now += 5000;
  await s.release({ ...delivery, due_at: parked[4]?.due_at });
  t.equal(delivered.length, 1, 'delivered again after one hop');
  t.equal(delivered[0]?.due_at, undefined, 'without a due time');
  t.equal(delivered[0]?.attempt_number, 2, 'parking is not an attempt: the number is unchanged');
});

t.test('a retry due between tiers moves down the tiers until due', async (t) => {
  const at = { now: Date.parse('2026-01-01T00:00:00Z') };
  const { s, parked, delivered } = scheduler(at);
  await s.schedule(delivery, new Date(at.now + 7000));
  t.equal(parked.at(-1)?.tier, 1, 'waits in the 5 s tier first');
  at.now += 5000;
  await s.release({ ...delivery, due_at: parked.at(-1)?.due_at });
  t.equal(parked.at(-1)?.tier, 0, 'then in the 1 s tier');
  t.equal(delivered.length, 0);
  at.now += 2000;
  await s.release({ ...delivery, due_at: parked.at(-1)?.due_at });
  t.equal(delivered.length, 1, 'then delivered');
});

t.test('a delivery that keeps finding its destination stalled waits at least the n-th tier on its n-th park', async (t) => {
  const at = { now: Date.parse('2026-01-01T00:00:00Z') };
  const { s, parked, delivered } = scheduler(at);
  // The destination has been stalled for 2 s each time the delivery comes back to it.
  let d: DeliveryRecord = delivery;
  for (let i = 0; i < 5; i++) {
    await s.park(d, 2000);
    const p = parked.at(-1) as (typeof parked)[number];
    at.now = Date.parse(p.due_at ?? '');
    await s.release(p.record);
    d = delivered.at(-1) as DeliveryRecord;
  }
  t.same(
    parked.map((p) => p.tier),
    [0, 1, 2, 2, 2],
    '1 s, 5 s, then 30 s at most while the stall is short',
  );
  t.equal(d.parked, 5, 'the record counts its parks in a row');
  t.equal(d.attempt_number, 2, 'none of them an attempt');

  // An attempt starts the count again: a retry is scheduled by its own due time, without the count.
  await s.schedule(d, new Date(at.now + 1000));
  t.equal(parked.at(-1)?.record.parked, undefined, 'a scheduled retry carries no park count');
});

t.test('a destination stalled for minutes has its deliveries parked for up to 300 s', async (t) => {
  const at = { now: Date.parse('2026-01-01T00:00:00Z') };
  const { s, parked } = scheduler(at);
  await s.park(delivery, 299_000);
  await s.park({ ...delivery, parked: 9 }, 299_000);
  await s.park(delivery, 300_000);
  await s.park({ ...delivery, parked: 9 }, 3_600_000);
  t.same(
    parked.map((p) => p.tier),
    [2, 2, 3, 3],
    '30 s while the stall is under five minutes, 300 s after (never a longer tier)',
  );
});

t.test('a due delivery of a destination this process is parking deliveries of is parked again at once', async (t) => {
  const at = { now: Date.parse('2026-01-01T00:00:00Z') };
  const stalled = new Map([['d1', 40_000]]);
  const { s, parked, delivered } = scheduler(at, (d) => stalled.get(d.destination.id) ?? 0);
  await s.park(delivery, 40_000);
  const first = parked.at(-1) as (typeof parked)[number];
  at.now += 30_000;
  await s.release(first.record);
  t.equal(delivered.length, 0, 'not sent to the delivery topic while the destination stalls');
  t.equal(parked.length, 2, 'parked again');
  t.equal(parked.at(-1)?.tier, 2, 'by the park ladder (stalled 40 s: the 30 s tier)');
  t.equal(parked.at(-1)?.record.parked, 2, 'and counted as the second park in a row');
  t.equal(Date.parse(parked.at(-1)?.due_at ?? '') - at.now, 30_000, 'due one tier from now');

  const other = { ...delivery, destination: { ...delivery.destination, id: 'd2' } };
  await s.release({ ...other, due_at: new Date(at.now).toISOString() });
  t.equal(delivered[0]?.destination.id, 'd2', 'a destination not stalled here gets its delivery');
  t.equal(delivered[0]?.due_at, undefined, 'without a due time');

  stalled.delete('d1');
  at.now += 30_000;
  await s.release((parked.at(-1) as (typeof parked)[number]).record);
  t.equal(delivered.at(-1)?.destination.id, 'd1', 'once the destination is not stalled, its delivery goes out');
  t.equal(delivered.at(-1)?.attempt_number, 2, 'parking was no attempt');
});

t.test('a rate-limit turn is held until just before it rather than hopping the shortest tier again', async (t) => {
  const at = { now: Date.parse('2026-01-01T00:00:00Z') };
  const slept: number[] = [];
  const delivered: DeliveryRecord[] = [];
  const parked: Array<{ tier: number; record: DeliveryRecord }> = [];
  const s = createRetryScheduler({
    deliver: async (d) => void delivered.push(d),
    park: async (d, tier) => void parked.push({ tier, record: d }),
    now: () => at.now,
    sleep: async (ms) => {
      slept.push(ms);
      at.now += ms;
    },
  });
  const due = (ms: number) => new Date(at.now + ms).toISOString();
  const turn = { ...delivery, attempt_number: 1, turn_at: due(600) };
  await s.release({ ...turn, due_at: due(600) });
  t.same(slept, [600 - TURN_LEAD_MS], 'a rate-limit turn 600 ms away: held until just before it (the sender waits the rest)');
  t.equal(delivered.length, 1, 'then delivered');
  t.equal(delivered[0]?.turn_at, turn.turn_at, 'keeping its turn');
  t.equal(delivered[0]?.due_at, undefined);

  await s.release({ ...turn, due_at: due(TURN_LEAD_MS - 50) });
  t.equal(delivered.length, 2, 'a turn within the lead: at once');
  t.equal(slept.length, 1);

  // A scheduled event is not held (its tier partition would wait): it takes the 1 s tier again,
  // and a long one only the tiers that release it before deliver_at.
  const scheduled = { ...delivery, attempt_number: 1, event: { ...delivery.event, deliver_at: due(900) } };
  await s.release({ ...scheduled, due_at: due(900) });
  t.equal(parked.at(-1)?.tier, 0, 'a scheduled event 900 ms early: the 1 s tier');
  await s.release({ ...scheduled, due_at: due(31_000) });
  t.equal(parked.at(-1)?.tier, 1, '31 s early: the 5 s tier, not the 30 s one that may release it 1.2 s late');
  await s.release({ ...delivery, due_at: due(31_000) });
  t.equal(parked.at(-1)?.tier, 2, 'a plain retry 31 s early: the 30 s tier, as before');

  await s.release({ ...delivery, due_at: due(600) });
  t.equal(parked.at(-1)?.tier, 0, 'a plain retry 600 ms early takes the 1 s tier again (its partition is not held)');
  await s.release({ ...turn, due_at: due(1500) });
  t.equal(parked.at(-1)?.tier, 0, 'beyond the hold (the 1 s tier hop: 1.3 s), a turn takes a tier');
  t.equal(slept.length, 1, 'none of them slept');

  // A retry after an attempt spends the turn; a park for a turn keeps it.
  await s.schedule(turn, new Date(at.now + 5000));
  t.equal(parked.at(-1)?.record.turn_at, undefined, 'a retry carries no turn');
  await s.parkUntil({ ...turn, parked: 2 }, new Date(at.now + 5000));
  t.equal(parked.at(-1)?.record.turn_at, turn.turn_at, 'parked for its turn: kept');
  t.equal(parked.at(-1)?.record.parked, undefined, 'and no stall count');
  t.equal(parked.at(-1)?.tier, 0, 'in a tier that releases it in time (the 5 s one could be 0.7 s late)');
  await s.parkUntil(turn, new Date(at.now + 6000));
  t.equal(parked.at(-1)?.tier, 1, 'the 5 s tier once its hop ends before the turn');
});

t.test('a delivery parked for a turn goes at once when its destination no longer has a limit', async (t) => {
  const at = { now: Date.parse('2026-01-01T00:00:00Z') };
  const delivered: DeliveryRecord[] = [];
  const parked: Array<{ tier: number; record: DeliveryRecord }> = [];
  let lifted = false;
  const asked: string[] = [];
  const s = createRetryScheduler({
    deliver: async (d) => void delivered.push(d),
    park: async (d, tier) => void parked.push({ tier, record: d }),
    turnLifted: async (d) => {
      asked.push(d.event.id);
      return lifted;
    },
    now: () => at.now,
  });
  const due = (ms: number) => new Date(at.now + ms).toISOString();
  const turn = { ...delivery, attempt_number: 1, turn_at: due(20_000), due_at: due(20_000) };
  await s.release(turn);
  t.equal(parked.at(-1)?.record.turn_at, turn.turn_at, 'limit still set: back to a tier, turn kept');
  t.equal(delivered.length, 0);

  lifted = true;
  await s.release(turn);
  t.equal(delivered.length, 1, 'limit removed: delivered at the hop, not at its turn 20 s later');
  t.equal(delivered[0]?.turn_at, undefined, 'without its turn');
  t.equal(delivered[0]?.due_at, undefined);
  t.equal(parked.length, 1, 'not parked again');

  // Only turns ask: a retry or a scheduled event waits its due time whatever the limit.
  asked.length = 0;
  await s.release({ ...delivery, due_at: due(20_000) });
  const scheduled = { ...delivery, attempt_number: 1, event: { ...delivery.event, id: 'e2', deliver_at: due(20_000) } };
  await s.release({ ...scheduled, due_at: due(20_000) });
  t.same(asked, [], 'a retry and a scheduled event are not asked');
  t.equal(delivered.length, 1, 'and both wait');
});
