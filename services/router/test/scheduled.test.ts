import t from 'tap';
import { RETRY_TIERS_SECONDS } from '@switchyard/shared/bus/topics.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { tierBefore } from '@switchyard/shared/bus/consume.ts';
import { splitScheduled } from '../src/scheduled.ts';

const delivery = (deliverAt?: string): DeliveryRecord => ({
  event: {
    id: 'e1',
    tenant_id: 't1',
    topic: 'user.created',
    time: '2026-01-01T00:00:00.000Z',
    eligible_for_retry: true,
    metadata: null,
    data: {},
    ...(deliverAt ? { deliver_at: deliverAt } : {}),
  },
  destination: { id: 'd1', tenant_id: 't1', type: 'webhook', config: {}, credentials: null, delivery_metadata: null },
  attempt_number: 1,
  manual: false,
});

t.test('the first tier is the longest that releases the delivery before it is due, slack included', async (t) => {
  t.equal(tierBefore(0), 0);
  t.equal(tierBefore(4_999), 0);
  t.equal(tierBefore(5_000), 0, '5 s ahead: the 5 s tier would release it up to 0.7 s late');
  t.equal(tierBefore(5_700), 1, 'its delay, a tenth more and a fetch wait: in time');
  t.equal(tierBefore(31_000), 1, 'the 30 s tier only from 31.2 s (its slack is at most 1 s)');
  t.equal(tierBefore(31_200), 2);
  t.equal(tierBefore(7 * 86_400_000), RETRY_TIERS_SECONDS.length - 1, 'a week waits in the longest tier, hop after hop');
});

t.test('deliveries of events not due yet wait in the tiers, due at deliver_at; the rest go at once', async (t) => {
  const now = Date.parse('2026-01-01T00:00:00.000Z');
  const at = (ms: number) => new Date(now + ms).toISOString();
  const { due, waiting } = splitScheduled(
    [delivery(), delivery(at(-1000)), delivery(at(100)), delivery(at(10_000)), delivery(at(120_000))],
    now,
  );
  t.equal(due.length, 3, 'unscheduled, past and due within 250 ms go at once');
  t.same(
    [...waiting].map(([tier, list]) => [RETRY_TIERS_SECONDS[tier], list.map((d) => d.due_at)]),
    [
      [5, [at(10_000)]],
      [30, [at(120_000)]],
    ],
  );
  t.equal(waiting.get(1)?.[0]?.attempt_number, 1, 'still a first attempt');
});
