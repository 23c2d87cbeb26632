/**
 * What the attempts service has stored of a delivery (its `deliveries` row), read before a retry is
 * made: an automatic retry (attempt 2 and on), a manual one, a parked delivery back from its retry
 * tier, or a scheduled event's delivery come due. Two things follow from it:
 * - an automatic retry of a delivery that has succeeded since (a manual retry did, or the delivery
 *   was made again from its own record after a crash) is not made: no request, no attempt, as when
 *   the other service cancels the retry it scheduled; so is a scheduled event's delivery that a
 *   manual retry made before it was due;
 * - the attempt is numbered after the last one stored, or handed out here and not stored yet, so a
 *   manual retry made while an automatic one waits does not share its number (1, 2 manual, 3; not
 *   1, 2 manual, 2), nor do two manual retries a moment apart. The retry schedule still counts the
 *   automatic attempts only: a manual retry does not use up the delivery's retries.
 *
 * A first attempt is not read for (one read per delivery would cost the database a query per
 * event), but for a scheduled event's: only retries, parked and scheduled deliveries, which are few. A success is seen once the attempts service has stored it
 * (well under a second in the ordinary case). A read that fails changes nothing: the retry is made
 * as it would have been, since a database away must not hold up deliveries.
 */
import type { Knex } from '@switchyard/shared/db/index.ts';
import { statement } from '@switchyard/shared/db/statement.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { RecentKeys } from '@switchyard/shared/recent-keys.ts';

/** What is stored of a retry's delivery. */
export interface Stored {
  /** An automatic retry of a delivery that has succeeded since: not made. */
  superseded: boolean;
  /** The delivery's last attempt number stored (0: none). */
  attempts: number;
}

// The delivery's primary key: created_at is its event's received_at (the partition key).
const READ_DELIVERY = statement(
  'sender_read_delivery',
  `SELECT attempts, successful_at IS NOT NULL AS succeeded FROM deliveries
   WHERE tenant_id = ? AND event_id = ? AND destination_id = ? AND created_at = ?`,
);

// Deliveries whose last number handed out or tried is remembered: retries, and the tries an ordered
// destination's drain makes of a delivery that failed; a number only has to outlive the few hundred
// milliseconds before its attempt is stored.
const REMEMBERED = 10_000;

/**
 * True for a delivery whose stored progress is read before it is made: a retry, automatic or manual,
 * and a parked delivery (a stalled or rate-limited destination's), which comes back from a retry tier.
 * A sender killed after parking it reads its record again from the deliveries topic (the committed
 * offset is held back by the deliveries in flight) and makes it from there: the parked copy must
 * then see that success, or the delivery is made twice. And a scheduled event's delivery: a manual
 * retry may have made it before it was due, in another process or before a restart.
 */
export const isRetry = (d: DeliveryRecord): boolean =>
  d.manual || d.attempt_number > 1 || (d.parked ?? 0) > 0 || d.turn_at !== undefined || Boolean(d.event.deliver_at);

/** The number `d`'s attempt takes, `after` the delivery's last one: its retries still count from its own. */
export const attemptNumber = (d: DeliveryRecord, after: number): number => Math.max(d.attempt_number, after + 1);

/** A delivery's key: what `createMadeHere` remembers it by (computed once per record) and what numbers its retries. */
export const madeKey = (d: DeliveryRecord) => `${d.event.tenant_id}\u0000${d.event.id}\u0000${d.destination.id}`;

/**
 * The deliveries this process made successfully lately (their attempts written), by `madeKey`. A
 * delivery may come twice in one process: its parked copy back from a retry tier, and its own record
 * read again from the deliveries topic after a crash (the committed offset held back by the
 * deliveries in flight), in either order, the second often before the attempts service has stored
 * the first's success, or even while the first is under way. The second waits for the first
 * (`whenDone`) and is not made once it succeeded: a set lookup for every delivery, no database read.
 */
export function createMadeHere(max = 20_000) {
  const made = new RecentKeys(max);
  const running = new Map<string, Promise<void>>();
  return {
    /** The delivery succeeded and its attempt was written. */
    add: (key: string) => made.add(key),
    has: (key: string) => made.has(key),
    /** The delivery is under way until the function returned is called. */
    start(key: string): () => void {
      let end = () => {};
      const done = new Promise<void>((resolve) => {
        end = resolve;
      });
      running.set(key, done);
      return () => {
        if (running.get(key) === done) running.delete(key);
        end();
      };
    },
    /** Settles once a copy of the delivery under way ends; undefined when none is. */
    whenDone: (key: string): Promise<void> | undefined => running.get(key),
  };
}

export type MadeHere = ReturnType<typeof createMadeHere>;

export function createDeliveryProgress(db: Knex, log: Logger) {
  // A delivery's records share its destination's key, so one process makes all of them: the numbers
  // it handed out cover the attempts not stored yet (two manual retries a moment apart).
  const handedOut = new Map<string, number>();
  const remember = (key: string, n: number) => {
    handedOut.delete(key);
    handedOut.set(key, n);
    if (handedOut.size > REMEMBERED) handedOut.delete(handedOut.keys().next().value as string);
  };

  async function read(d: DeliveryRecord): Promise<{ attempts: number; succeeded: boolean } | null> {
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
  }

  return {
    /**
     * What is stored of `d`'s delivery, read before its turn (no read between a rate limit's turn and
     * the request): an automatic retry of a delivery that has succeeded since is superseded. A
     * delivery not stored yet, or a read that failed: made, numbered as far as known.
     */
    async read(d: DeliveryRecord): Promise<Stored> {
      const stored = await read(d);
      return { superseded: Boolean(stored?.succeeded && !d.manual), attempts: stored?.attempts ?? 0 };
    },
    /** The number `d`'s attempt comes after, handed out now (its turn came): kept, so the next one counts past it. */
    after(d: DeliveryRecord, stored: Stored): number {
      const key = madeKey(d);
      // No await between this read of the numbers handed out and the remembering of this one.
      const after = Math.max(stored.attempts, handedOut.get(key) ?? 0);
      remember(key, attemptNumber(d, after));
      return after;
    },
    /**
     * `d`'s delivery was tried as number `n` without `after` (an ordered drain numbers its tries
     * from the blocked delivery's own): kept, so a manual retry of it, from the spill or from its
     * partition, is numbered past it before that attempt is stored.
     */
    tried(d: DeliveryRecord, n: number): void {
      const key = madeKey(d);
      remember(key, Math.max(n, handedOut.get(key) ?? 0));
    },
  };
}

export type DeliveryProgress = ReturnType<typeof createDeliveryProgress>;
