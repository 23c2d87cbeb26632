// Ordered delivery against Postgres: what an ordered destination's sender skips as delivered already.
// A router that crashed after writing a batch's deliveries and before committing it routes those
// events again: new delivery records, after the later ones, at offsets past the destination's
// position. Once those events were delivered, the repeats are skipped; a scheduled event's delivery,
// which comes from the retry tiers after later events, is not.
import t from 'tap';
import { createDb, migrateLatest } from '@switchyard/shared/db/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { createTestDatabase } from '@switchyard/shared/testing/index.ts';
import { createOrderedDelivery, createOrderedStore } from '../src/controls/ordered.ts';
import { createDeliveryHandler } from '../src/handler.ts';
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

t.test('an event routed again after a router crash is not delivered again; a due scheduled one is', async (t) => {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 2 });
  t.teardown(() => db.destroy());
  await migrateLatest(db);
  const sent: number[] = [];
  const sender: Sender = {
    async deliver({ event }) {
      sent.push((event.data as { n: number }).n);
      return { status: 'success', code: '200', response_data: null, retryable: false };
    },
    close: async () => {},
  };
  const handle = createDeliveryHandler({
    senders: { webhook: sender },
    open: () => ({ credentials: {}, delivery_metadata: {} }),
    emitAttempt: async () => {},
    scheduleRetry: async () => {},
    retry: { schedule: [], intervalSeconds: 1, maxRetries: 3, maxRetryAfterMs: 60_000 },
    timeoutMs: 1000,
  });
  const make = () =>
    createOrderedDelivery({
      handle,
      turn: async () => {},
      written: () => {},
      store: createOrderedStore(db),
      types: ['webhook'],
      log: createLogger('test', 'silent'),
    });
  let inOrder = make();
  t.teardown(() => inOrder.close());
  /** What the delivery consumer does with one record of the partition. */
  const consume = async (offset: number, d: DeliveryRecord) => {
    const record = { topic: TOPIC, partition: 0, offset: String(offset), value: d };
    if (await inOrder.skip(d, record)) return;
    if (await inOrder.spills(record)) return;
    await (await inOrder.deliver(d, undefined, record)).write();
  };

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
