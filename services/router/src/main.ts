// Router process: events topic -> one delivery record per matching destination, on that type's topic.
import { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { TOPIC } from '@switchyard/shared/kafka/topics.ts';
import type { DeliveryRecord, EventRecord } from '@switchyard/shared/model/index.ts';
import { onShutdown } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { createRouter } from './handler.ts';

const rt = await createRuntime('router');
const destinations = new DestinationStore(rt.db, rt.cipher);
const producer = await rt.bus.producer();

const route = createRouter({
  destinationsOf: (tenantId) => destinations.list(tenantId),
  snapshot: (d) => destinations.snapshot(d),
  async emit(deliveries: DeliveryRecord[]) {
    const byType = Map.groupBy(deliveries, (d) => d.destination.type);
    await Promise.all(
      [...byType].map(([type, records]) =>
        producer.send(
          TOPIC.deliveries[type],
          records.map((r) => ({ key: r.destination.id, value: r })),
        ),
      ),
    );
  },
});

await rt.bus.consume<EventRecord>({
  groupId: 'router',
  topics: [TOPIC.events],
  async handle(record) {
    const started = performance.now();
    const { deliveries, skippedDisabled } = await route(record.value);
    rt.logger.info(
      {
        event_id: record.value.id,
        tenant_id: record.value.tenant_id,
        topic: record.value.topic,
        destinations: deliveries.map((d) => d.destination.id),
        skipped_disabled: skippedDisabled,
        duration_ms: Math.round(performance.now() - started),
      },
      'route',
    );
  },
});
rt.logger.info('router consuming');
onShutdown(rt.logger, () => rt.close());
