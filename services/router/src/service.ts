// Router: events topic -> one delivery record per matching destination, on that type's topic; wired to
// a runtime (main.ts: its own process; services/embedded: every service in one process).
import { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { EventIdStore } from '@switchyard/shared/db/stores/event-ids.ts';
import { JsonText, spliceJson } from '@switchyard/shared/bus/record-codec.ts';
import { GROUP, TOPIC } from '@switchyard/shared/bus/topics.ts';
import { createLogSummary } from '@switchyard/shared/log-summary.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import type { TraceSpan } from '@switchyard/shared/tracing.ts';
import { createRouter } from './handler.ts';
import { splitScheduled } from './scheduled.ts';
import { metrics } from '@switchyard/shared/metrics.ts';

export async function start(rt: Runtime): Promise<Service> {
  // Each event's line is at debug; at info, a line a minute while events come (log-summary.ts).
  const summary = createLogSummary(rt.logger, 'router summary', ['events_routed', 'deliveries', 'duplicates', 'dead_lettered']);
  const destinations = new DestinationStore(rt.db, rt.cipher);
  const eventIds = new EventIdStore(rt.db);
  const producer = await rt.bus.producer();
  const tracing = rt.tracing;
  // Tracing on only: the route span of each event of the batches in hand, by tenant and event id
  // (the router's events are copies of the records' values), with the headers its deliveries carry.
  const spans = new Map<string, { span: TraceSpan; headers: Record<string, string> }>();
  const spanKey = (tenantId: unknown, id: unknown) => `${String(tenantId)}\n${String(id)}`;
  const traced = (r: { event: { tenant_id: string; id: string } }, record: { key: string; value: unknown }) => {
    const s = spans.get(spanKey(r.event.tenant_id, r.event.id));
    return s ? { ...record, headers: s.headers } : record;
  };

  const routeBatch = createRouter({
    topics: rt.config.TOPICS,
    maxMessageBytes: rt.config.KAFKA_MAX_MESSAGE_BYTES,
    destinationsOf: (tenantIds) => destinations.routableOf(tenantIds),
    claim: (claims) => eventIds.claim(claims),
    async emit({ deliveries, routed, deadLetters, json }) {
      // Deliveries of scheduled events wait in the retry tiers until due (scheduled.ts).
      const { due, waiting } = splitScheduled(deliveries);
      for (const list of waiting.values())
        for (const d of list) metrics.scheduledDeliveries.inc({ type: d.destination.type, stage: 'waiting' });
      const byType = Map.groupBy(due, (d) => d.destination.type);
      // Each event and destination snapshot is written as JSON once per batch (`json`, by the size
      // check) and spliced into its records: a fan-out to ten destinations serialised the same event
      // eleven times.
      // One produce request for every topic: the idempotent producer sends one request at a time.
      await producer.sendMany([
        ...[...byType].map(([type, records]) => ({
          topic: TOPIC.deliveries[type],
          records: records.map((r) => {
            const record = { key: r.destination.id, value: new JsonText(() => spliceJson(r, ['event', 'destination'], json)) };
            return tracing ? traced(r, record) : record;
          }),
        })),
        ...[...waiting].map(([tier, records]) => ({
          topic: TOPIC.retries[tier] as (typeof TOPIC.retries)[number],
          records: records.map((r) => {
            const record = { key: r.destination.id, value: new JsonText(() => spliceJson(r, ['event', 'destination'], json)) };
            return tracing ? traced(r, record) : record;
          }),
        })),
        {
          topic: TOPIC.routed,
          records: routed.map((r) => ({ key: r.event.tenant_id, value: new JsonText(() => spliceJson(r, ['event'], json)) })),
        },
        {
          topic: TOPIC.deadLetter,
          records: deadLetters.map(({ key, value, headers }) => (headers ? { key, value, headers } : { key, value })),
        },
      ]);
    },
  });

  /** routeBatch, ending the batch's route spans with its outcome for each event. */
  async function routeTraced(records: Parameters<typeof routeBatch>[0], keys: string[]) {
    try {
      const result = await routeBatch(records);
      for (const r of result.routed)
        spans.get(spanKey(r.event.tenant_id, r.event.id))?.span.set({ 'switchyard.destinations': r.matched_destination_ids.length });
      for (const e of result.duplicates) spans.get(spanKey(e.tenant_id, e.id))?.span.set({ 'switchyard.outcome': 'duplicate' });
      for (const key of keys) spans.get(key)?.span.end();
      return result;
    } catch (err) {
      for (const key of keys) spans.get(key)?.span.end(err);
      throw err;
    } finally {
      for (const key of keys) spans.delete(key);
    }
  }

  const consumer = await rt.bus.consume<unknown>({
    groupId: GROUP.router,
    topics: [TOPIC.events],
    // Dead letters are the records as written, not as parsed (handler.ts).
    keepRaw: true,
    batchWaitMs: rt.config.ROUTER_BATCH_WAIT_MS,
    // Behind, the router holds a fetch of events and every delivery they expand to at once.
    fetchMaxBytes: rt.config.ROUTER_FETCH_MAX_BYTES,
    async handleBatch(records) {
      const started = performance.now();
      const keys: string[] = [];
      if (tracing) {
        for (const r of records) {
          const v = (r.value ?? {}) as { tenant_id?: unknown; id?: unknown };
          const key = spanKey(v.tenant_id, v.id ?? `kafka-${r.partition}-${r.offset}`);
          const span = tracing.span('route', 'consumer', r.headers, {
            'messaging.system': 'kafka',
            'messaging.operation.type': 'process',
            'messaging.destination.name': TOPIC.events.name,
            'messaging.kafka.offset': Number(r.offset),
            'messaging.destination.partition.id': String(r.partition),
            'switchyard.event_id': typeof v.id === 'string' ? v.id : undefined,
            'switchyard.tenant_id': typeof v.tenant_id === 'string' ? v.tenant_id : undefined,
          });
          spans.set(key, { span, headers: span.headers() });
          keys.push(key);
        }
      }
      const { routed, duplicates, deadLetters } = await (tracing ? routeTraced(records, keys) : routeBatch(records));
      const ms = Math.round(performance.now() - started);
      summary.add({
        events_routed: routed.length,
        deliveries: routed.reduce((n, r) => n + r.matched_destination_ids.length, 0),
        duplicates: duplicates.length,
        dead_lettered: deadLetters.length,
      });
      if (rt.logger.isLevelEnabled('debug')) {
        for (const r of routed) {
          rt.logger.debug(
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
        for (const e of duplicates) rt.logger.debug({ event_id: e.id, tenant_id: e.tenant_id, outcome: 'duplicate' }, 'route');
      }
      // Rare, and each one a record refused for good: one line each.
      for (const d of deadLetters) rt.logger.warn({ offset: d.offset, reason: d.reason, outcome: 'dead_letter' }, 'route');
    },
  });
  rt.logger.info('router consuming');
  return {
    async close() {
      await consumer.close();
      summary.stop();
    },
  };
}
