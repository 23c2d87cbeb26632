/**
 * Scheduled events canceled before they were due (POST .../events/{id}/cancel). Their deliveries
 * still come due in the retry tiers; before delivering one, the sender asks here, and a canceled
 * one ends as a `canceled` attempt (response_data.reason "event_canceled") instead of a request.
 * Only deliveries of scheduled events are looked up (one primary-key read when each comes due), and
 * never a manual retry (a person asked for that one). One that reaches a sender before it is due (due
 * within 250 ms when routed, or released by a clock ahead of this one) waits here until deliver_at
 * by this process's clock, however long: never delivered early, and never read for its cancellation
 * before then (the gateway refuses a cancel once the event is due within a second, so a cancel it
 * answered 200 is stored by then: services/gateway/src/routes/schedule.ts).
 */
import { setTimeout } from 'node:timers/promises';
import type { Knex } from '@switchyard/shared/db/index.ts';
import { metrics } from '@switchyard/shared/metrics.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';

export function createCancellations(db: Knex) {
  // An answer read before the delivery's turn (the rate gate: a canceled one takes no turn), kept for
  // its attempt to take once: one read a delivery, and a later try of it (an ordered destination's
  // drain) reads again.
  const readAhead = new WeakMap<DeliveryRecord, boolean>();
  // Deliveries counted due: one read more of the same delivery (its turn, then its try) counts none.
  const counted = new WeakSet<DeliveryRecord>();
  const read = async (delivery: DeliveryRecord): Promise<boolean> => {
    if (!delivery.event.deliver_at || delivery.manual) return false;
    // Once per delivery (its first attempt, not again when it comes back from waiting for its
    // turn), as the router counts it waiting once.
    if (delivery.attempt_number === 1 && !delivery.turn_at && !counted.has(delivery)) {
      counted.add(delivery);
      metrics.scheduledDeliveries.inc({ type: delivery.destination.type, stage: 'due' });
    }
    // The router sends one due within 250 ms at once, and clocks differ: never deliver a scheduled
    // event early. Timers may fire a little early: asked again until it is due.
    const due = Date.parse(delivery.event.deliver_at);
    for (let early = due - Date.now(); early > 0; early = due - Date.now()) await setTimeout(early);
    const row = await db('event_cancellations')
      .where({ tenant_id: delivery.event.tenant_id, event_id: delivery.event.id })
      .first('event_id');
    return row !== undefined;
  };
  return {
    /** True when `delivery` is of a scheduled event that was canceled. Throws when the database cannot be read (our fault: retried). */
    canceled(delivery: DeliveryRecord): Promise<boolean> {
      const known = readAhead.get(delivery);
      if (known === undefined) return read(delivery);
      readAhead.delete(delivery);
      return Promise.resolve(known);
    },
    /** As `canceled`, read before the delivery's turn; its attempt's `canceled` then takes this answer. */
    async ahead(delivery: DeliveryRecord): Promise<boolean> {
      const gone = await read(delivery);
      readAhead.set(delivery, gone);
      return gone;
    },
  };
}
