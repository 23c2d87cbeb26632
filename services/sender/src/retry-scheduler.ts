import { RETRY_TIERS_SECONDS } from '@switchyard/shared/bus/topics.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { tierFor } from './backoff.ts';

/** Longest a stalled destination's delivery is parked at a time: how late a recovered destination may see it. */
export const PARK_MAX_MS = 30_000;
/** A destination stalled this long (it has been timing out for minutes) has its deliveries parked for up to PARK_LONG_MS. */
export const PARK_LONG_STALL_MS = 300_000;
export const PARK_LONG_MS = 300_000;

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
  now?: () => number;
}

/**
 * Moves deliveries through the retry tiers. A record leaves a tier once the tier's delay has passed
 * (the bus holds it until then); if it is due it goes back to its delivery topic, otherwise down to
 * the tier that fits what remains. Retries rejoin the delivery topic behind first attempts rather
 * than jumping ahead, so neither starves the other.
 */
export function createRetryScheduler(deps: SchedulerDeps) {
  const now = deps.now ?? Date.now;
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
      // An attempt was made: the count of parks in a row starts again.
      const { parked: _parked, ...rest } = delivery;
      await deps.park({ ...rest, due_at: dueAt.toISOString() }, tierFor(dueAt.getTime() - now()), headers);
    },
    park,
    async release(delivery: DeliveryRecord, headers?: Headers): Promise<void> {
      const remaining = Date.parse(delivery.due_at ?? '') - now();
      if (!(remaining > 250)) {
        const { due_at: _due, ...rest } = delivery;
        const stalledMs = deps.stalledHere?.(rest) ?? 0;
        await (stalledMs > 0 ? park(rest, stalledMs, headers) : deps.deliver(rest, headers));
      } else {
        await deps.park(delivery, tierFor(remaining), headers);
      }
    },
  };
}
