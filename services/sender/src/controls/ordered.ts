/**
 * Ordered delivery (`ordered: true` on a destination): its deliveries are made one at a time, in the
 * order of its delivery partition, which is the order of the events topic (the router writes one
 * destination's deliveries, keyed by its id, in the order it reads the events). The delivery consumer
 * runs such a key one record at a time and never parks its records (orderedKey; KeyedLimiter.pin in
 * shared/src/bus/inflight.ts), and the rate gate never parks them either: a record whose rate-limit
 * turn is more than HOLD_MS away (controls/rate-limit.ts) goes to its destination's spill (below),
 * whose drain waits for the turn, rather than wait in the partition, where the records of its key
 * queued behind it would take the slots of every destination there for as long as the turns last.
 *
 * A delivery that fails and is due a retry is not handed to the retry tiers (the next delivery would
 * pass it), nor retried where it is (its later records would wait in the partition, taking the slots
 * of every destination there). It goes to its destination's spill (`ordered_spill`), with its block
 * (`ordered_blocks`: the event, its failed attempt, its next try), in one transaction, and its record
 * is done. While a destination has a spill, every later record of it is appended there too (by its
 * position in the partition, so appending one again after a crash is a no-op) and done at once: a
 * blocked destination holds none of its partition's slots. A drain takes the spill in the order it
 * was spilled (the order the records were read, also across a change of partition count), one
 * delivery at a time: each try waits for its destination's rate-limit turn first (a retry too), and a
 * failed try is retried after the usual backoff (one attempt recorded per try), the destination's
 * next delivery waiting, until it succeeds, its retries are exhausted or it is not retryable (the
 * failed attempt is final), or it is canceled; then the next. Once the spill is empty, records are
 * delivered straight from the partition again. Closing the sender ends a drain's waits (for a retry
 * or a turn); what it was to deliver stays in the spill.
 *
 * One drain per destination at a time, across senders: a lease (`ordered_drains`), renewed while it
 * drains. A sender starts one when it spills, when a record finds a spill, and for spills no drain
 * holds (looked for every ORPHANS_MS: after a kill -9 or a rebalance, no record may come to point at
 * them). Whether a destination has a spill is read from Postgres with its block before each direct
 * delivery, never cached: a spill another sender wrote is seen at once.
 *
 * A crash also makes the records after the last committed offset come again, some of them delivered
 * already, and a router that crashed routes its last events again, as new records after later ones.
 * Each ordered delivery that ends writes its record's offset and its event's place in the events
 * topic (`ordered_positions`) before the next one starts; a record at or below the first, or whose
 * event is at or before the second, is skipped (`skip`). A scheduled event's delivery comes from the
 * retry tiers when due, after later events, so its event's place neither skips it nor moves. The
 * position is read once per destination per process and then kept in memory (it only grows). A direct delivery costs two round
 * trips to Postgres (the spill and block read, the position written); a spilled one its append, and
 * in the drain its read (a page at a time), its position and its removal.
 *
 * A skipped delivery's attempt may never have reached the attempts topic (a kill -9 after its position
 * was written, before the attempt was acknowledged; the next delivery does not wait for that). So the
 * position is written with the attempts of the destination's ended deliveries not yet acknowledged,
 * this one's included, in the same statement; when the record at the position comes again (only
 * then can any of them be unwritten: offsets are committed in order, and a record is done only once
 * its attempt is written), those are written again with their ids, which the attempts service stores
 * once (`attempts` key: id and time).
 *
 * A manual retry of an ordered destination's event is delivered when its turn in the partition comes
 * (behind a blocked delivery, in the spill, if any), out of the event's original order, and never
 * retried in place; numbered after its delivery's attempts, those the drain made just before it too.
 */
import { setTimeout } from 'node:timers/promises';
import { newId } from '@switchyard/shared/ids.ts';
import { failureRun, type Logger } from '@switchyard/shared/log.ts';
import { metrics } from '@switchyard/shared/metrics.ts';
import type { AttemptRecord, DeliveryRecord } from '@switchyard/shared/model/index.ts';
import type { DeliveryProgress } from '../delivery-progress.ts';
import type { Changed } from '../destination-state.ts';
import type { Handled } from '../handler.ts';
import { type Dest, destOf, type Ended, eventAt, LEASE_MS, type OrderedStore, type Position, type Spilled } from './ordered-store.ts';

/** How often a drain renews its lease. */
const RENEW_MS = LEASE_MS / 4;
/** How often a sender looks for spills no drain holds. */
export const ORPHANS_MS = 5_000;
/** Spilled deliveries a drain reads at once. */
const PAGE = 20;

/** True for a delivery whose destination keeps its order (its key runs one record at a time, never parked). */
export const isOrdered = (d: DeliveryRecord | null | undefined): boolean => d?.destination?.ordered === true;

/** What the consumer does with a skipped record once the key's slot is free: writes attempts again, if any. */
export type Rewrite = () => Promise<void>;

export interface OrderedDeps {
  /**
   * The delivery handler (handler.ts); `inPlace`: a due retry is answered as `next` instead of
   * scheduled; `after`: the number the attempt comes after (delivery-progress.ts).
   */
  handle(delivery: DeliveryRecord, trace: Record<string, string> | undefined, inPlace: boolean, after?: number): Promise<Handled>;
  /**
   * What is stored of a manual retry's delivery and the number its attempt takes; the drain's own
   * tries are noted there too, so a manual retry is numbered past them (delivery-progress.ts).
   */
  progress: Pick<DeliveryProgress, 'read' | 'after' | 'tried'>;
  /**
   * Before each try of a drained delivery: waits for its destination's rate-limit turn however far
   * (controls/rate-limit.ts; a delivery to be canceled takes none); rejects once `signal` aborts
   * (the sender closing, the drain stopped).
   */
  turn(delivery: DeliveryRecord, signal: AbortSignal): Promise<unknown>;
  /** After a drained delivery's attempt was written: its metrics and log line. */
  written(delivery: DeliveryRecord, h: Handled): void;
  /** Writes an attempt to the attempts topic (again: an ended delivery's, skipped after a crash). */
  emit(attempt: AttemptRecord): Promise<void>;
  /** True once a delivery is to be canceled, not tried (its destination deleted, disabled or re-created). */
  canceled(delivery: DeliveryRecord): Promise<boolean>;
  store: OrderedStore;
  /** The destination types this sender delivers (the orphaned spills it drains). */
  types: string[];
  log: Logger;
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  now?(): number;
}

const sleepFor = (ms: number, signal: AbortSignal): Promise<void> => setTimeout(ms, undefined, { signal });

/** A destination's drain in this process. */
interface Drain {
  dest: Dest;
  /** Appends to the spill under way, and made, since the drain started (it ends only when none came meanwhile). */
  appending: number;
  appended: number;
  stop: AbortController;
  done: Promise<void>;
}

export type OrderedDelivery = ReturnType<typeof createOrderedDelivery>;

/** Ordered delivery: the direct path of a delivery record, its spill and the drains (see above). */
export function createOrderedDelivery(deps: OrderedDeps) {
  const sleep = deps.sleep ?? sleepFor;
  const now = deps.now ?? Date.now;
  const { store, log } = deps;
  const owner = newId();
  const closing = new AbortController();
  // Positions known here, by destination (they only grow; a stale one skips less, never more).
  const positions = new Map<string, Ended>();
  // Attempts of deliveries that ended here, not yet acknowledged by the attempts topic, by destination.
  const unwritten = new Map<string, AttemptRecord[]>();
  // Attempts read with a stored position: written again if the record at it comes again.
  const restored = new Map<string, AttemptRecord[]>();
  const drains = new Map<string, Drain>();
  // A drain that ended here gives up its lease before the next one of its destination claims it.
  const releasing = new Map<string, Promise<void>>();
  const keyOf = (d: Dest) => `${d.tenant_id}\u0000${d.destination_id}`;
  // Drains waiting for a blocked delivery's next try or for a rate-limit turn, by destination: woken when it changes.
  const waiting = new Map<string, AbortController>();
  // Where the records are that `spills` left to be delivered from their partition (the rate gate
  // may still put one in its spill: spillUntilTurn), by their delivery.
  const direct = new WeakMap<DeliveryRecord, Position>();

  const forget = (k: string, ids: Set<string>) => {
    const rest = (unwritten.get(k) ?? []).filter((a) => !ids.has(a.id));
    if (rest.length) unwritten.set(k, rest);
    else unwritten.delete(k);
  };

  /** `h`, whose write, once it passed, takes its attempt off the destination's unwritten ones. */
  const tracked = (d: DeliveryRecord, h: Handled): Handled => ({
    ...h,
    write: async () => {
      await h.write();
      forget(keyOf(destOf(d)), new Set([h.attempt.id]));
    },
  });

  /**
   * The record at the position came again: the attempts not known to be written when it was saved
   * (read with it, or still unacknowledged here) are written again, with their ids.
   */
  const rewrite = (k: string): Rewrite => {
    const byId = new Map([...(restored.get(k) ?? []), ...(unwritten.get(k) ?? [])].map((a) => [a.id, a]));
    restored.delete(k);
    if (!byId.size) return async () => {};
    const again = [...byId.values()];
    // Until acknowledged, they go with the next position written too.
    unwritten.set(k, again);
    return async () => {
      await Promise.all(again.map((a) => deps.emit(a)));
      forget(k, new Set(byId.keys()));
      log.info(
        { attempts: again.map((a) => a.id), destination_id: again[0]?.destination_id },
        'wrote the attempts of ordered deliveries that had ended again',
      );
    };
  };

  /**
   * Null for a record to handle. Else an ordered destination's delivery that already ended: its record
   * at or below the last one that ended (read again after a crash), or its event at or before the last
   * one's in the events topic (routed again by a router that crashed: a new record, after later ones);
   * what is returned writes again the attempts that may not have been written (the record at the
   * position only), to run before the record is done.
   */
  const skip = async (d: DeliveryRecord, at: Position): Promise<Rewrite | null> => {
    if (!isOrdered(d) || d.manual) return null;
    const k = keyOf(destOf(d));
    let known = positions.get(k);
    if (!known) {
      const saved = await store.position(d);
      known = saved
        ? { topic: saved.topic, partition: saved.partition, offset: saved.offset, event: saved.event }
        : { topic: at.topic, partition: at.partition, offset: -1n, event: null };
      positions.set(k, known);
      if (saved?.attempts.length) restored.set(k, saved.attempts);
    }
    if (known.topic === at.topic && known.partition === at.partition && BigInt(at.offset) <= known.offset)
      return BigInt(at.offset) === known.offset ? rewrite(k) : async () => {};
    const ev = eventAt(d);
    const again = ev !== null && known.event !== null && known.event.partition === ev.partition && ev.offset <= known.event.offset;
    return again ? async () => {} : null;
  };

  /** `h` (final) ended `d`: its position is written; what is returned writes its attempt. */
  const ended = async (d: DeliveryRecord, at: Position, h: Handled): Promise<Handled> => {
    const k = keyOf(destOf(d));
    // A record past the position came: the one at it was done, its attempts written.
    restored.delete(k);
    // Before the next delivery of the destination starts: after a crash, this one is not made again,
    // and its attempt (with any earlier one not yet acknowledged) is written again instead.
    await store.ended(d, at, [...(unwritten.get(k) ?? []), h.attempt]);
    // Added to what is unwritten now: an earlier write may have been acknowledged meanwhile.
    unwritten.set(k, [...(unwritten.get(k) ?? []), h.attempt]);
    const before = positions.get(k)?.event ?? null;
    const ev = eventAt(d);
    const event = ev === null ? before : before && before.partition === ev.partition && before.offset > ev.offset ? before : ev;
    positions.set(k, { topic: at.topic, partition: at.partition, offset: BigInt(at.offset), event });
    return tracked(d, h);
  };

  /** The drain of `dest` in this process, started if there is none. */
  const drainOf = (dest: Dest): Drain => {
    const k = keyOf(dest);
    let dr = drains.get(k);
    if (!dr) {
      const drain: Drain = { dest, appending: 0, appended: 0, stop: new AbortController(), done: Promise.resolve() };
      drains.set(k, drain);
      drain.done = (releasing.get(k) ?? Promise.resolve())
        .then(() => runDrain(drain))
        .finally(() => {
          if (drains.get(k) === drain) drains.delete(k);
        });
      dr = drain;
    }
    return dr;
  };

  /** Writes to `d`'s destination's spill, counted by its local drain (started if need be), so that it does not end past the write. */
  const appending = async <T>(d: DeliveryRecord, write: () => Promise<T>): Promise<T> => {
    const dr = drainOf(destOf(d));
    dr.appending++;
    try {
      return await write();
    } finally {
      dr.appending--;
      dr.appended++;
    }
  };

  // Failed looks in a row (every ORPHANS_MS while the database is away): one warning, then debug.
  const looks = failureRun(log, 'looking for ordered spills without a drain');
  const sweep = setInterval(() => void findOrphans(), ORPHANS_MS);
  sweep.unref();
  void findOrphans();

  return {
    skip,
    /**
     * True when `record` went to its destination's spill (it has one, or its block names this very
     * event: a delivery that was blocking when the process died): its drain makes it. Else the caller
     * delivers it (`deliver`).
     */
    async spills(record: Position & { value: DeliveryRecord }): Promise<boolean> {
      const d = record.value;
      if (!drains.has(keyOf(destOf(d)))) {
        const { spilled, block } = await store.state(d);
        if (!spilled && !(block && block.event_id === d.event.id && !d.manual)) {
          direct.set(d, { topic: record.topic, partition: record.partition, offset: record.offset });
          return false;
        }
      }
      await appending(d, () => store.spill(d, record));
      return true;
    },
    /**
     * True when `d`, a record `spills` left to be delivered from its partition, went to its
     * destination's spill after all: its rate-limit turn is more than the hold away (the rate gate
     * asks), and its drain waits for it, holding no slot of the partition; the destination's later
     * records follow it there, in order. False for any other delivery (it waits for its turn where it is).
     */
    async spillUntilTurn(d: DeliveryRecord): Promise<boolean> {
      const at = direct.get(d);
      if (!at) return false;
      await appending(d, () => store.spill(d, at));
      direct.delete(d);
      return true;
    },
    /**
     * One try of an ordered destination's delivery from its partition. Final: its position is
     * written and it is returned to be written as usual. Due a retry: its attempt is written, it goes
     * to the spill with its block and its drain starts; what is returned has nothing left to write.
     */
    async deliver(
      d: DeliveryRecord,
      trace: Record<string, string> | undefined,
      at: Position,
      beforeWrite?: (h: Handled) => void,
    ): Promise<Handled> {
      const h = await deps.handle(d, trace, true);
      if (!h.next) return ended(d, at, h);
      // Spilled before the destination's next record is handled (it waits for this one's slot).
      beforeWrite?.(h);
      await h.write();
      metrics.orderedRetries.inc({ type: d.destination.type });
      const next = h.next;
      await appending(d, () => store.spillBlocked(d, at, h.attempt.attempt_number, next.dueAt));
      return { ...h, write: async () => {} };
    },
    /**
     * A destination changed (destination_id null: every one of the tenant; null: any): a drain waiting
     * for its blocked delivery's next try looks whether the delivery is now to be canceled, and one
     * waiting for a rate-limit turn asks for it again.
     */
    changed(c: Changed | null): void {
      for (const [k, wake] of waiting) {
        const hit =
          c === null ||
          (c.destination_id === null
            ? k.startsWith(`${c.tenant_id}\u0000`)
            : k === keyOf({ tenant_id: c.tenant_id, destination_id: c.destination_id }));
        if (hit) wake.abort();
      }
    },
    /** Stops the drains (a delivery waiting for its retry stays spilled and blocking) and gives up their leases. */
    async close(): Promise<void> {
      clearInterval(sweep);
      closing.abort(new Error('the sender is closing'));
      for (const dr of drains.values()) dr.stop.abort(new Error('the sender is closing'));
      await Promise.allSettled([...drains.values()].map((dr) => dr.done));
    },
  };

  async function findOrphans(): Promise<void> {
    if (closing.signal.aborted) return;
    try {
      for (const dest of await store.orphans(deps.types)) if (!closing.signal.aborted) drainOf(dest);
      looks.worked();
    } catch (err) {
      looks.failed(err);
    }
  }

  /** Drains `dr.dest`'s spill while this process holds its lease; ends once it is empty. */
  async function runDrain(dr: Drain): Promise<void> {
    const signal = AbortSignal.any([closing.signal, dr.stop.signal]);
    const k = keyOf(dr.dest);
    let renewed = 0;
    let renewer: NodeJS.Timeout | null = null;
    try {
      if (signal.aborted || !(await store.claim(dr.dest, owner))) return;
      renewed = now();
      // A lease that could not be renewed in time may be another sender's now: this drain stops.
      renewer = setInterval(() => {
        store.claim(dr.dest, owner).then(
          (held) => {
            if (held) renewed = now();
            else dr.stop.abort(new Error('the drain lease went to another sender'));
          },
          (err: unknown) => {
            log.warn({ err: (err as Error).message, destination_id: dr.dest.destination_id }, 'renewing an ordered drain lease failed');
            if (now() - renewed > LEASE_MS) dr.stop.abort(new Error('the drain lease expired'));
          },
        );
      }, RENEW_MS);
      renewer.unref();
      for (let failures = 0; !signal.aborted; ) {
        try {
          const before = dr.appended;
          const rows = await store.head(dr.dest, PAGE);
          if (!rows.length) {
            // Nothing appended meanwhile: records of the destination are delivered directly again.
            if (dr.appending === 0 && dr.appended === before) {
              drains.delete(k);
              if (renewer) clearInterval(renewer);
              const ending = store
                .unblock(dr.dest)
                .then(() => store.release(dr.dest, owner))
                .catch(() => {})
                .finally(() => releasing.get(k) === ending && releasing.delete(k));
              releasing.set(k, ending);
              renewed = 0;
              await ending;
              return;
            }
            await sleep(20, signal); // an append under way
            continue;
          }
          for (const row of rows) {
            if (signal.aborted) return;
            await drainOne(row, signal);
          }
          failures = 0;
        } catch (err) {
          if (signal.aborted) return;
          log.error({ err, destination_id: dr.dest.destination_id }, 'draining an ordered spill failed; will retry');
          await sleep(Math.min(30_000, 200 * 2 ** failures++), signal).catch(() => {});
        }
      }
    } finally {
      if (renewer) clearInterval(renewer);
      if (renewed) await store.release(dr.dest, owner).catch(() => {});
    }
  }

  /**
   * Waits until `dueAt` for a blocked delivery's next try, or less: a change of its destination that
   * cancels it (deleted, disabled, created again under its id) ends the wait, so the deliveries behind
   * it (the new destination's too) do not wait for a try that can only be canceled.
   */
  async function untilDue(d: DeliveryRecord, dueAt: number, signal: AbortSignal): Promise<void> {
    const k = keyOf(destOf(d));
    for (;;) {
      const wake = new AbortController();
      waiting.set(k, wake);
      try {
        // Looked at first too: a change may have come while the last try was made.
        if (await deps.canceled(d).catch(() => false)) return;
        await sleep(Math.max(0, dueAt - now()), AbortSignal.any([signal, wake.signal]));
        return;
      } catch (err) {
        if (signal.aborted) throw err;
      } finally {
        if (waiting.get(k) === wake) waiting.delete(k);
      }
    }
  }

  /**
   * Waits for a drained delivery's rate-limit turn. A change of its destination (its limit removed,
   * it deleted or disabled) gives the turn up and asks again, so a delivery that need not wait any
   * longer does not wait out a turn given under the old limit.
   */
  async function atTurn(d: DeliveryRecord, signal: AbortSignal): Promise<void> {
    const k = keyOf(destOf(d));
    for (;;) {
      const wake = new AbortController();
      waiting.set(k, wake);
      try {
        await deps.turn(d, AbortSignal.any([signal, wake.signal]));
        return;
      } catch (err) {
        if (signal.aborted || !wake.signal.aborted) throw err;
      } finally {
        if (waiting.get(k) === wake) waiting.delete(k);
      }
    }
  }

  /** One spilled delivery, tried until it ends; then off the spill. */
  async function drainOne({ delivery: d, at }: Spilled, signal: AbortSignal): Promise<void> {
    const dest = destOf(d);
    const skipped = await skip(d, at);
    if (skipped) {
      // Ended before a crash, after its position was written; its attempt is written (again) first.
      await skipped();
      await store.clear(d);
      await store.drop(dest, at);
      return;
    }
    const h = d.manual ? await manually(d, signal) : await untilEnded(d, at, signal);
    await h.write();
    deps.written(d, h);
    await store.drop(dest, at);
    metrics.orderedSpill.inc({ type: d.destination.type, stage: 'drained' });
  }

  /**
   * A manual retry from the spill: one try, at its destination's turn, numbered after the attempts
   * of its delivery stored or made here (the blocked delivery it waited behind may be the same).
   */
  async function manually(d: DeliveryRecord, signal: AbortSignal): Promise<Handled> {
    const stored = await deps.progress.read(d);
    await atTurn(d, signal);
    return deps.handle(d, undefined, false, deps.progress.after(d, stored));
  }

  /** A spilled delivery tried until it ends; resolves to its final try, not yet written. Throws when stopped. */
  async function untilEnded(delivery: DeliveryRecord, at: Position, signal: AbortSignal): Promise<Handled> {
    let d = delivery;
    let blocked = false;
    // It blocked already (it failed from the partition, or before a restart): its tries go on where they were.
    const block = await store.get(d);
    if (block && block.event_id === d.event.id && block.attempt_number >= d.attempt_number) {
      blocked = true;
      d = { ...d, attempt_number: block.attempt_number + 1 };
      await untilDue(d, block.next_attempt_at.getTime(), signal);
    }
    for (;;) {
      if (signal.aborted) throw signal.reason;
      // Each try at a turn of its destination's rate limit: a retry is a start like any other (one
      // to be canceled takes none).
      await atTurn(d, signal);
      const h = await deps.handle(d, undefined, true);
      // Noted for a delivery that failed once (a retry, or failing now): a manual retry of it must be
      // numbered past this try before its attempt is stored. A first try that ends it needs no note.
      if (h.next || h.attempt.attempt_number > 1) deps.progress.tried(d, h.attempt.attempt_number);
      if (!h.next) {
        const final = await ended(d, at, h);
        if (blocked) await store.clear(d);
        return final;
      }
      // The failed try's attempt is written now; the destination's next delivery waits for its retry.
      await h.write();
      deps.written(d, { ...h, write: async () => {} });
      blocked = true;
      metrics.orderedRetries.inc({ type: d.destination.type });
      await store.set(d, h.attempt.attempt_number, h.next.dueAt);
      d = h.next.delivery;
      await untilDue(d, h.next.dueAt.getTime(), signal);
    }
  }
}
