// A scheduled event's delivery that reaches a sender before deliver_at (the router sends one due
// within 250 ms at once; another clock releases it early) is held until deliver_at, however early,
// and only then is its cancellation read: a cancel the gateway answered 200 is found.
import t, { type Test } from 'tap';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { onBothDatabases } from '@switchyard/shared/testing/databases.ts';
import { createCancellations } from '../src/controls/scheduled.ts';
import { deliveryRecord } from './records.ts';

const dueIn = (id: string, ms: number): DeliveryRecord => {
  const now = new Date().toISOString();
  return deliveryRecord({ event: { id, time: now, received_at: now, deliver_at: new Date(Date.now() + ms).toISOString() } });
};

onBothDatabases(t, 'an early delivery is held until deliver_at, then reads a cancel made meanwhile', async (t: Test, db) => {
  const cancellations = createCancellations(db);
  const d = dueIn('e-early', 2500);
  const due = Date.parse(d.event.deliver_at as string);
  const answer = cancellations.canceled(d);
  // Canceled while the delivery is held, more than a second before it is due (as the gateway allows).
  await db('event_cancellations').insert({ tenant_id: 't', event_id: 'e-early' });
  t.equal(await answer, true, 'read once due: canceled');
  t.ok(Date.now() >= due, `not read before deliver_at (${Date.now() - due} ms after)`);

  const live = dueIn('e-live', 1500);
  t.equal(await cancellations.ahead(live), false, 'a live one is not canceled');
  t.ok(Date.now() >= Date.parse(live.event.deliver_at as string), 'and was held until due as well');
  t.equal(await cancellations.canceled(live), false, 'its attempt takes the answer read ahead');
  const manual = { ...dueIn('e-manual', 60_000), manual: true };
  const started = Date.now();
  t.equal(await cancellations.canceled(manual), false, 'a manual retry is neither read nor held');
  t.ok(Date.now() - started < 30_000, 'it went at once, not at deliver_at');
});
