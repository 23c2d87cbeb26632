import { setTimeout } from 'node:timers/promises';
import { tierBefore, tierHopMs } from '@switchyard/shared/bus/consume.ts';
import { RETRY_TIERS_SECONDS } from '@switchyard/shared/bus/topics.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { tierFor } from './backoff.ts';
import { TURN_LEAD_MS } from './controls/rate-limit.ts';

/** Longest a stalled destination's delivery is parked at a time: how late a recovered destination may see it. */
export const PARK_MAX_MS = 30_000;
/** A destination stalled this long (it has been timing out for minutes) has its deliveries parked for up to PARK_LONG_MS. */
export const PARK_LONG_STALL_MS = 300_000;
export const PARK_LONG_MS = 300_000;

/**
 * A delivery due at an exact time (a rate-limit turn, a scheduled event's deliver_at) waits in the
 * tiers that release it before it is due, their slack included (tierBefore), never in one that may
 * release it late. A rate-limit turn is then held here once at most this long remains (the shortest
 * tier's hop: 1 s, plus its release slack and fetch wait) and sent back TURN_LEAD_MS before it,
 * rather than a hop that could bring it back up to that late, into the turns of others. Its tier
 * partition waits meanwhile (the commit and the next fetch follow the release), which under a
 * steady stream of held records delays those behind it: so only turns are held, not scheduled events.
 */
export const DUE_HOLD_MS = tierHopMs(0);

/** Record headers that travel with a delivery through the tiers (its trace context, tracing on only). */
type Headers = Record<string, string> | undefined;

export interface SchedulerDeps {
  /** Sends a delivery back to its type's delivery topic. */
  deliver(delivery: DeliveryRecord, headers?: Headers): Promise<void>;
  /** Parks a delivery in retry tier `tier` (an index into RETRY_TIERS_SECONDS). */
  park(delivery: DeliveryRecord, tier: number, headers?: Headers): Promise<void>;
  /**
   * How long the delivery's destination has been stalled, if this process would park a delivery of
   * it arriving now (its delivery consumer's divertsNow), else 0. A due delivery of such a
   * destination is parked again at once: one hop through Kafka instead of two (the delivery topic,
   * then back to a tier).
   */
  stalledHere?(delivery: DeliveryRecord): number;
  /**
   * True when a delivery parked for a rate-limit turn need not wait for it any longer: its
   * destination has no limit now (removed, or the destination disabled or deleted: the sender then
   * records it canceled). Asked each time a tier releases such a delivery before its turn.
   */
  turnLifted?(delivery: DeliveryRecord): boolean | Promise<boolean>;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** True for a delivery due at an exact time: a rate-limit turn or a scheduled event. */
const dueExactly = (d: DeliveryRecord): boolean => d.turn_at !== undefined || (d.event.deliver_at !== undefined && !d.manual);
/** True for a delivery held here until due: a rate-limit turn. */
const heldUntilDue = (d: DeliveryRecord): boolean => d.turn_at !== undefined;

/**
 * Moves deliveries through the retry tiers. A record leaves a tier once the tier's delay has passed
 * (the bus holds it until then); if it is due it goes back to its delivery topic, otherwise down to
 * the tier that fits what remains. Retries rejoin the delivery topic behind first attempts rather
 * than jumping ahead, so neither starves the other.
 */
export function createRetryScheduler(deps: SchedulerDeps) {
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => setTimeout(ms));
  /**
   * Parks a delivery (not an attempt) of a destination stalled for `stalledMs`: for exactly the
   * delay of one tier (one hop through Kafka, where a due time between tiers would take several),
   * the longest not longer than the stall; and the n-th park in a row waits at least the n-th tier.
   * A delivery that keeps finding its destination stalled thus reaches the 30 s tier by its third
   * park instead of circling through the short tiers while the stall is young; 300 s per hop once
   * the stall has lasted PARK_LONG_STALL_MS.
   */
  const park = async (delivery: DeliveryRecord, stalledMs: number, headers?: Headers): Promise<void> => {
    const longest = tierFor(stalledMs >= PARK_LONG_STALL_MS ? PARK_LONG_MS : PARK_MAX_MS);
    const parked = (delivery.parked ?? 0) + 1;
    const tier = Math.min(longest, Math.max(tierFor(stalledMs), parked - 1));
    const dueAt = now() + (RETRY_TIERS_SECONDS[tier] as number) * 1000;
    await deps.park({ ...delivery, parked, due_at: new Date(dueAt).toISOString() }, tier, headers);
  };
  return {
    /** Where a fresh retry starts waiting. */
    async schedule(delivery: DeliveryRecord, dueAt: Date, headers?: Headers): Promise<void> {
      // An attempt was made: the count of parks in a row starts again, and a rate-limit turn is spent.
      const { parked: _parked, turn_at: _turn, ...rest } = delivery;
      await deps.park({ ...rest, due_at: dueAt.toISOString() }, tierFor(dueAt.getTime() - now()), headers);
    },
    /** Parks a delivery not attempted (a rate-limit turn, `turn_at` kept) until `dueAt` (DUE_HOLD_MS). */
    async parkUntil(delivery: DeliveryRecord, dueAt: Date, headers?: Headers): Promise<void> {
      const { parked: _parked, ...rest } = delivery;
      await deps.park({ ...rest, due_at: dueAt.toISOString() }, tierBefore(dueAt.getTime() - now()), headers);
    },
    park,
    async release(delivery: DeliveryRecord, headers?: Headers): Promise<void> {
      let remaining = Date.parse(delivery.due_at ?? '') - now();
      if (remaining > 0 && heldUntilDue(delivery) && (await deps.turnLifted?.(delivery))) {
        // The limit it waited for is gone: delivered now, as a delivery arriving now would be.
        const { due_at: _due, turn_at: _turn, ...rest } = delivery;
        await deps.deliver(rest, headers);
        return;
      }
      if (remaining <= DUE_HOLD_MS && heldUntilDue(delivery)) {
        // A little early: the sender waits the rest, its way back through the delivery topic covered.
        const wait = remaining - TURN_LEAD_MS;
        if (wait > 0) await sleep(wait);
        remaining = 0;
      }
      if (!(remaining > 250)) {
        const { due_at: _due, ...rest } = delivery;
        const stalledMs = deps.stalledHere?.(rest) ?? 0;
        await (stalledMs > 0 ? park(rest, stalledMs, headers) : deps.deliver(rest, headers));
      } else {
        await deps.park(delivery, dueExactly(delivery) ? tierBefore(remaining) : tierFor(remaining), headers);
      }
    },
  };
}
