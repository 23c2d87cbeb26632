// Tells the senders a destination changed (the destination-changes topic), after the change is
// stored, so the deliveries already queued for it use it as it is now (services/sender/src/destination-state.ts).
import type { BusProducer } from '@switchyard/shared/bus/index.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import type { DestinationChange } from '@switchyard/shared/model/index.ts';

export type Announce = (change: Omit<DestinationChange, 'time'>) => Promise<void>;

/**
 * Written before the answer goes out. The change is stored already, so a failed write is logged,
 * not answered: the senders then see the change when their entry expires (a minute at most).
 */
export function createAnnouncer(producer: BusProducer, log: Logger): Announce {
  return async (change) => {
    const value: DestinationChange = { ...change, time: new Date().toISOString() };
    try {
      await producer.send(TOPIC.destinationChanges, [{ key: change.tenant_id, value }]);
    } catch (err) {
      log.error({ err, ...change }, 'destination change not announced; senders see it within a minute');
    }
  };
}
