/**
 * Delivery records for the sender's unit tests: event `e1` (topic `x`, tenant `t`) to webhook
 * destination `d1`, its first automatic attempt. A test states only what it is about.
 */
import type { DeliveryRecord, DestinationSnapshot, EventRecord } from '@switchyard/shared/model/index.ts';

type Overrides = Partial<Omit<DeliveryRecord, 'event' | 'destination'>> & {
  event?: Partial<EventRecord>;
  destination?: Partial<DestinationSnapshot>;
};

export const deliveryRecord = ({ event, destination, ...rest }: Overrides = {}): DeliveryRecord => ({
  event: {
    id: 'e1',
    tenant_id: 't',
    topic: 'x',
    time: '2026-01-01T00:00:00Z',
    eligible_for_retry: true,
    metadata: null,
    data: {},
    ...event,
  },
  destination: { id: 'd1', tenant_id: 't', type: 'webhook', config: {}, credentials: null, delivery_metadata: null, ...destination },
  attempt_number: 1,
  manual: false,
  ...rest,
});
