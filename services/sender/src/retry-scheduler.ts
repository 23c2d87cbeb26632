import { RETRY_TIERS_SECONDS } from '@switchyard/shared/kafka/topics.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { tierFor } from '@switchyard/shared/retry/schedule.ts';

export interface SchedulerDeps {
  /** Sends a delivery back to its type's delivery topic. */
  deliver(delivery: DeliveryRecord): Promise<void>;
  /** Parks a delivery in retry tier `tier` (an index into RETRY_TIERS_SECONDS). */
  park(delivery: DeliveryRecord, tier: number): Promise<void>;
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
  return {
    /** Where a fresh retry starts waiting. */
    async schedule(delivery: DeliveryRecord, dueAt: Date): Promise<void> {
      await deps.park({ ...delivery, due_at: dueAt.toISOString() }, tierFor(dueAt.getTime() - now()));
    },
    /**
     * Parks a delivery (not an attempt) for exactly the delay of `tier`, the longest tier not longer
     * than `wantedMs`: one hop through Kafka, where a due time between tiers would take several.
     */
    async park(delivery: DeliveryRecord, wantedMs: number): Promise<void> {
      const tier = tierFor(wantedMs);
      const dueAt = now() + (RETRY_TIERS_SECONDS[tier] as number) * 1000;
      await deps.park({ ...delivery, due_at: new Date(dueAt).toISOString() }, tier);
    },
    async release(delivery: DeliveryRecord): Promise<void> {
      const remaining = Date.parse(delivery.due_at ?? '') - now();
      if (!(remaining > 250)) {
        const { due_at: _due, ...rest } = delivery;
        await deps.deliver(rest);
      } else {
        await deps.park(delivery, tierFor(remaining));
      }
    },
  };
}
