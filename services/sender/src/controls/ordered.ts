/**
 * Ordered delivery (`ordered: true` on a destination): its deliveries are made one at a time, in the
 * order of its delivery partition, which is the order of the events topic (the router writes one
 * destination's deliveries, keyed by its id, in the order it reads the events). The delivery consumer
 * runs such a key one record at a time and never parks its records (orderedKey; KeyedLimiter.pin in
 * shared/src/bus/inflight.ts), and the rate gate never parks them either.
 *
 * A failed try is not handed to the retry tiers (the next delivery would pass it): its attempt is
 * written, and the delivery is tried again here after the usual backoff, holding its destination's
 * slot, one attempt recorded per try. Its offset stays uncommitted meanwhile, so after a kill -9 the
 * same delivery comes first again; what it had reached (`ordered_blocks`, below) lets it go on with
 * its attempt numbers and backoff rather than start over. It ends once it succeeds, its retries are
 * exhausted or it is not retryable (the failed attempt is final and visible as such), or it is
 * canceled (destination disabled, deleted, pending deliveries canceled): then the next one goes.
 *
 * While one is retried in place, `ordered_blocks` says which event blocks the destination, its
 * attempt number, its next try and how many deliveries wait behind it (refreshed every
 * REFRESH_MS while it waits): the gateway answers it (GET .../destinations/{id}/order).
 *
 * A crash also makes the records after the last committed offset come again, some of them delivered
 * already. Each ordered delivery that ends writes its record's offset (`ordered_positions`) before
 * the next one starts; a record at or below it is skipped (`skip`), so the receiver never sees an
 * earlier event again behind a later one. Only the delivery that ended as the process died may come
 * twice (right after itself, in order). The position is read once per destination per process and
 * then kept in memory (it only grows). An ordered delivery costs two round trips to Postgres: its
 * `ordered_blocks` row read before its first try (a retry in place after our own fault, or a
 * restart, goes on from it) and its position written once it ends.
 *
 * A manual retry of an ordered destination's event is delivered when its turn in the partition comes
 * (behind a blocked delivery, if any), out of the event's original order, and never retried in place.
 */
import type { Knex } from '@switchyard/shared/db/index.ts';
import { metrics } from '@switchyard/shared/metrics.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import type { Handled } from '../handler.ts';

/** How often a blocked destination's waiting count is written again while its delivery waits for its retry. */
export const REFRESH_MS = 5_000;

/** True for a delivery whose destination keeps its order (its key runs one record at a time, never parked). */
export const isOrdered = (d: DeliveryRecord | null | undefined): boolean => d?.destination?.ordered === true;

export interface Block {
  event_id: string;
  attempt_number: number;
  next_attempt_at: Date;
}

export interface OrderedBlocks {
  /** What blocks the destination of `d` now, if anything was recorded. */
  get(d: DeliveryRecord): Promise<Block | null>;
  /** Records that `d`'s try `attemptNumber` failed and the next is due at `next`, with `waiting` behind it. */
  set(d: DeliveryRecord, attemptNumber: number, next: Date, waiting: number): Promise<void>;
  /** `d` no longer blocks its destination. */
  clear(d: DeliveryRecord): Promise<void>;
  /** The offset of the last delivery of `d`'s destination that ended, in `topic` and `partition`; null: none known. */
  position(d: DeliveryRecord, at: Position): Promise<bigint | null>;
  /** Records that the delivery at `at` ended. */
  ended(d: DeliveryRecord, at: Position): Promise<void>;
}

/** Where a delivery record is: its topic, partition and offset. */
export interface Position {
  topic: string;
  partition: number;
  offset: string;
}

/** The `ordered_blocks` table (migration 013). */
export function createOrderedBlocks(db: Knex): OrderedBlocks {
  const where = (d: DeliveryRecord) => ({ tenant_id: d.destination.tenant_id, destination_id: d.destination.id });
  return {
    async get(d) {
      const row = (await db('ordered_blocks').where(where(d)).first('event_id', 'attempt_number', 'next_attempt_at')) as
        | { event_id: string; attempt_number: number; next_attempt_at: Date | string }
        | undefined;
      return row ? { event_id: row.event_id, attempt_number: row.attempt_number, next_attempt_at: new Date(row.next_attempt_at) } : null;
    },
    async set(d, attemptNumber, next, waiting) {
      const row = { ...where(d), event_id: d.event.id, attempt_number: attemptNumber, next_attempt_at: next, waiting };
      // `since` stays while the same event blocks; a new blocking event starts it again.
      await db('ordered_blocks')
        .insert(row)
        .onConflict(['tenant_id', 'destination_id'])
        .merge({
          ...row,
          since: db.raw('CASE WHEN ordered_blocks.event_id = excluded.event_id THEN ordered_blocks.since ELSE now() END'),
          updated_at: db.fn.now(),
        });
    },
    async position(d, at) {
      const row = (await db('ordered_positions').where(where(d)).first('topic', 'partition', 'offset')) as
        | { topic: string; partition: number; offset: string | number }
        | undefined;
      return row && row.topic === at.topic && row.partition === at.partition ? BigInt(row.offset) : null;
    },
    async ended(d, at) {
      const row = { ...where(d), topic: at.topic, partition: at.partition, offset: at.offset };
      await db('ordered_positions').insert(row).onConflict(['tenant_id', 'destination_id']).merge(row);
    },
    async clear(d) {
      await db('ordered_blocks')
        .where({ ...where(d), event_id: d.event.id })
        .delete();
    },
  };
}

export interface OrderedDeps {
  /** The delivery handler (handler.ts), asked to answer a due retry instead of scheduling it. */
  handle(delivery: DeliveryRecord, trace: Record<string, string> | undefined, inPlace: true): Promise<Handled>;
  /** Deliveries of the destination waiting behind this one in this process. */
  waiting(delivery: DeliveryRecord): number;
  blocks: OrderedBlocks;
  /** Aborted when the sender closes: a delivery waiting for its retry stops (uncommitted, so it comes again). */
  signal: AbortSignal;
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  now?(): number;
}

const sleepFor = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const done = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', done);
      resolve();
    }, ms);
    signal.addEventListener('abort', done, { once: true });
  });

export type OrderedDelivery = ReturnType<typeof createOrderedDelivery>;

/**
 * An ordered destination's delivery, tried until it ends (see above); resolves to its final try, which
 * the caller writes as usual. Throws (our fault: the record stays uncommitted) when closing stops it.
 */
export function createOrderedDelivery(deps: OrderedDeps) {
  const sleep = deps.sleep ?? sleepFor;
  const now = deps.now ?? Date.now;
  // Positions known here, by destination (they only grow; a stale one skips less, never more).
  const positions = new Map<string, { topic: string; partition: number; offset: bigint }>();
  const keyOf = (d: DeliveryRecord) => `${d.destination.tenant_id}\u0000${d.destination.id}`;
  /** True for an ordered destination's delivery that already ended before a crash (at or below its position): nothing to do. */
  const skip = async (d: DeliveryRecord, at: Position): Promise<boolean> => {
    if (!isOrdered(d) || d.manual) return false;
    let known = positions.get(keyOf(d));
    if (!known || known.topic !== at.topic || known.partition !== at.partition) {
      const offset = await deps.blocks.position(d, at);
      known = { topic: at.topic, partition: at.partition, offset: offset ?? -1n };
      positions.set(keyOf(d), known);
    }
    return BigInt(at.offset) <= known.offset;
  };
  return { skip, deliver: deliverInOrder };

  async function deliverInOrder(delivery: DeliveryRecord, trace: Record<string, string> | undefined, at: Position): Promise<Handled> {
    let d = delivery;
    let blocked = false;
    // Came again after a restart while it was blocking: its tries go on where they were.
    if (!d.manual) {
      const block = await deps.blocks.get(d);
      if (block && block.event_id === d.event.id && block.attempt_number >= d.attempt_number) {
        blocked = true;
        d = { ...d, attempt_number: block.attempt_number + 1 };
        await waitUntil(block.next_attempt_at.getTime(), d);
      }
    }
    for (;;) {
      if (deps.signal.aborted) throw new Error('the sender is closing: the ordered delivery is retried after restart');
      const h = await deps.handle(d, trace, true);
      if (!h.next) {
        // Before the next delivery of the destination starts: after a crash, this one is not made again.
        await deps.blocks.ended(d, at);
        positions.set(keyOf(d), { topic: at.topic, partition: at.partition, offset: BigInt(at.offset) });
        if (blocked) await deps.blocks.clear(d);
        return h;
      }
      // The failed try's attempt is written now; its retry holds the slot, so later deliveries wait.
      await h.write();
      blocked = true;
      metrics.orderedRetries.inc({ type: d.destination.type });
      await deps.blocks.set(d, h.attempt.attempt_number, h.next.dueAt, deps.waiting(d));
      await waitUntil(h.next.dueAt.getTime(), h.next.delivery, h.attempt.attempt_number);
      d = h.next.delivery;
    }
  }

  /** Waits until `dueAt`, writing the waiting count again every REFRESH_MS while it changes. */
  async function waitUntil(dueAt: number, d: DeliveryRecord, failedAttempt = d.attempt_number - 1): Promise<void> {
    let shown = deps.waiting(d);
    for (let left = dueAt - now(); left > 0; left = dueAt - now()) {
      await sleep(Math.min(left, REFRESH_MS), deps.signal);
      const waiting = deps.waiting(d);
      if (waiting !== shown && dueAt - now() > 0) {
        shown = waiting;
        await deps.blocks.set(d, failedAttempt, new Date(dueAt), waiting);
      }
    }
  }
}
