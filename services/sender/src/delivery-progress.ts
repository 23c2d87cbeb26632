/**
 * What the attempts service has stored of a delivery (its `deliveries` row), read before a retry is
 * made: an automatic retry (attempt 2 and on) or a manual one. Two things follow from it:
 * - an automatic retry of a delivery that has succeeded since (a manual retry did) is not made: no
 *   request, no attempt, as when the other service cancels the retry it scheduled;
 * - the attempt is numbered after the last one stored, so a manual retry made while an automatic
 *   one waits does not share its number (1, 2 manual, 3; not 1, 2 manual, 2). The retry schedule
 *   still counts the automatic attempts only: a manual retry does not use up the delivery's retries.
 *
 * A first attempt is never read for (one read per delivery would cost the database a query per
 * event): only retries, which are few. A success is seen once the attempts service has stored it
 * (well under a second in the ordinary case). A read that fails changes nothing: the retry is made
 * as it would have been, since a database away must not hold up deliveries.
 */
import type { Knex } from '@switchyard/shared/db/index.ts';
import { statement } from '@switchyard/shared/db/statement.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';

export interface Stored {
  /** The delivery's last attempt number stored (0: none yet). */
  attempts: number;
  succeeded: boolean;
}

// The delivery's primary key: created_at is its event's received_at (the partition key).
const READ_DELIVERY = statement(
  'sender_read_delivery',
  `SELECT attempts, successful_at IS NOT NULL AS succeeded FROM deliveries
   WHERE tenant_id = ? AND event_id = ? AND destination_id = ? AND created_at = ?`,
);

/** True for a delivery whose stored progress is read before it is made (a retry, automatic or manual). */
export const isRetry = (d: DeliveryRecord): boolean => d.manual || d.attempt_number > 1;

export function createDeliveryProgress(db: Knex, log: Logger) {
  /** The stored progress of `d`'s delivery; null when none is stored yet or it could not be read. */
  return async function stored(d: DeliveryRecord): Promise<Stored | null> {
    const { event } = d;
    try {
      const res = await READ_DELIVERY.run<{ rows: Array<{ attempts: number; succeeded: boolean }> }>(db, [
        event.tenant_id,
        event.id,
        d.destination.id,
        event.received_at ?? event.time,
      ]);
      const row = res.rows[0];
      return row ? { attempts: Number(row.attempts), succeeded: row.succeeded === true } : null;
    } catch (err) {
      log.warn(
        { err: (err as Error).message, event_id: event.id, destination_id: d.destination.id },
        'reading a delivery before its retry failed',
      );
      return null;
    }
  };
}
