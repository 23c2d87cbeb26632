// The retry tiers: where a retry or a parked delivery waits, and what happens when it comes out.
import t from 'tap';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { createRetryScheduler } from '../src/retry-scheduler.ts';

const delivery: DeliveryRecord = {
  event: { id: 'e1', tenant_id: 't', topic: 'x', time: '2026-01-01T00:00:00Z', eligible_for_retry: true, metadata: null, data: {} },
  destination: { id: 'd1', tenant_id: 't', type: 'webhook', config: {}, credentials: null, delivery_metadata: null },
  attempt_number: 2,
  manual: false,
};

function scheduler(at: { now: number }) {
  const parked: Array<{ tier: number; due_at?: string }> = [];
  const delivered: DeliveryRecord[] = [];
  const s = createRetryScheduler({
    deliver: async (d) => void delivered.push(d),
    park: async (d, tier) => void parked.push({ tier, due_at: d.due_at }),
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
