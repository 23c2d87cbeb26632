// Router: events topic -> one delivery record per matching destination, on that type's topic; wired to
// a runtime (main.ts: its own process; services/embedded: every service in one process).
import { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { EventIdStore } from '@switchyard/shared/db/stores/event-ids.ts';
import { JsonText, jsonOnce, spliceJson } from '@switchyard/shared/kafka/json-text.ts';
import { TOPIC } from '@switchyard/shared/kafka/topics.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import { createRouter } from './handler.ts';

export async function start(rt: Runtime): Promise<Service> {
  const destinations = new DestinationStore(rt.db, rt.cipher);
  const eventIds = new EventIdStore(rt.db);
  const producer = await rt.bus.producer();

  const routeBatch = createRouter({
    topics: rt.config.TOPICS,
    destinationsOf: (tenantIds) => destinations.routableOf(tenantIds),
    claim: (claims) => eventIds.claim(claims),
    async emit({ deliveries, routed, deadLetters }) {
      const byType = Map.groupBy(deliveries, (d) => d.destination.type);
      // Each event and destination snapshot is written as JSON once per batch and spliced into its
      // records: a fan-out to ten destinations serialised the same event eleven times.
      const json = jsonOnce();
      // One produce request for every topic: the idempotent producer sends one request at a time.
      await producer.sendMany([
        ...[...byType].map(([type, records]) => ({
          topic: TOPIC.deliveries[type],
          records: records.map((r) => ({
            key: r.destination.id,
            value: new JsonText(() => spliceJson(r, ['event', 'destination'], json)),
          })),
        })),
        {
          topic: TOPIC.routed,
          records: routed.map((r) => ({ key: r.event.tenant_id, value: new JsonText(() => spliceJson(r, ['event'], json)) })),
        },
        {
          topic: TOPIC.deadLetter,
          records: deadLetters.map((d) => ({ key: d.key, value: d.value, headers: { 'x-dead-letter-reason': d.reason.slice(0, 1000) } })),
        },
      ]);
    },
  });

  const consumer = await rt.bus.consume<unknown>({
    groupId: 'router',
    topics: [TOPIC.events],
    batchWaitMs: rt.config.ROUTER_BATCH_WAIT_MS,
    // Behind, the router holds a fetch of events and every delivery they expand to at once.
    fetchMaxBytes: rt.config.ROUTER_FETCH_MAX_BYTES,
    async handleBatch(records) {
      const started = performance.now();
      const { routed, duplicates, deadLetters } = await routeBatch(records);
      const ms = Math.round(performance.now() - started);
      for (const r of routed) {
        rt.logger.info(
          {
            event_id: r.event.id,
            tenant_id: r.event.tenant_id,
            topic: r.event.topic,
            destinations: r.matched_destination_ids,
            skipped_disabled: r.skipped_destination_ids,
            batch_ms: ms,
          },
          'route',
        );
      }
      for (const e of duplicates) rt.logger.info({ event_id: e.id, tenant_id: e.tenant_id, outcome: 'duplicate' }, 'route');
      for (const d of deadLetters) rt.logger.warn({ offset: d.offset, reason: d.reason, outcome: 'dead_letter' }, 'route');
    },
  });
  rt.logger.info('router consuming');
  return { close: () => consumer.close() };
}
