// Scheduled events (deliver_at): routed when published, like any event, so they are stored and
// listed at once; their deliveries go to the retry tiers rather than to their delivery topics, due
// at deliver_at, and the retry scheduler sends them on when due (services/sender/src/retry-scheduler.ts).
// So waiting holds no delivery partition and no sender slot, and survives any restart (it is in Kafka).
import { tierBefore } from '@switchyard/shared/bus/consume.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';

/** Deliveries due sooner than this go out at once: the scheduler releases what is due within it too. */
const DUE_NOW_MS = 250;

/** Splits a batch's deliveries into those due now and those of scheduled events, by the tier they wait in. */
export function splitScheduled(
  deliveries: DeliveryRecord[],
  now = Date.now(),
): { due: DeliveryRecord[]; waiting: Map<number, DeliveryRecord[]> } {
  const due: DeliveryRecord[] = [];
  const waiting = new Map<number, DeliveryRecord[]>();
  for (const d of deliveries) {
    const at = d.event.deliver_at ? Date.parse(d.event.deliver_at) : Number.NaN;
    if (!(at - now > DUE_NOW_MS)) {
      due.push(d);
      continue;
    }
    // The longest tier that releases it before deliver_at, slack included: never late by a long tier's slack.
    const tier = tierBefore(at - now);
    const list = waiting.get(tier) ?? [];
    list.push({ ...d, due_at: new Date(at).toISOString() });
    waiting.set(tier, list);
  }
  return { due, waiting };
}
