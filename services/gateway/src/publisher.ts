import { createBatcher } from '@switchyard/shared/batcher.ts';
import type { EventIdStore, Reservation } from '@switchyard/shared/db/stores/event-ids.ts';
import { AppError } from '@switchyard/shared/errors.ts';
import type { BusProducer } from '@switchyard/shared/bus.ts';
import { TOPIC } from '@switchyard/shared/kafka/topics.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import type { Tracing } from '@switchyard/shared/tracing.ts';
import type { EventRecord } from '@switchyard/shared/model/index.ts';
import { matchesFilter, matchesTopic } from '@switchyard/shared/routing/match.ts';
import type { RoutingCache } from './routing-cache.ts';

/**
 * Pauses of a repeat whose id is still in flight, before it asks again (1.6 s in all): the
 * original's accepted mark lands a few ms after its 202, so a client repeating at once learns
 * `duplicate`, not 409. Still in flight after that (the original is slow or its publisher died):
 * 409 EVENT_CONFLICT, to retry.
 */
const IN_FLIGHT_WAITS_MS = [20, 50, 100, 200, 400, 800];

export interface PublishResult {
  id: string;
  duplicate: boolean;
  destination_ids: string[];
}

/**
 * The publish path: tenant check from memory, a reservation for caller-chosen ids, then the events
 * topic with acks=all. Reservations and Kafka writes are batched across concurrent requests, so a
 * busy gateway makes one database statement and one produce request per batch, not per event.
 */
export function createPublisher(deps: {
  producer: BusProducer;
  eventIds: EventIdStore;
  routing: RoutingCache;
  log: Logger;
  lingerMs?: number;
  /**
   * Longest a publish waits for its write (PUBLISH_TIMEOUT_MS); then 503. The write goes on: if it
   * lands, a repeat with the same id (released here, so accepted again) writes a second record,
   * which the router drops as a repeat of the event (it claims each tenant and id once).
   */
  timeoutMs?: number;
  /** With tracing on, each publish is a span and its event's record carries the traceparent. */
  tracing?: Tracing | null;
}) {
  const tracing = deps.tracing ?? null;
  // The trace headers of events being published (tracing on only): the batcher takes events.
  const traceHeaders = new WeakMap<EventRecord, Record<string, string>>();
  const reserve = createBatcher((keys: Array<{ tenant_id: string; id: string }>) => deps.eventIds.reserve(keys), 1000);
  const accept = createBatcher(async (keys: Array<{ tenant_id: string; id: string }>) => {
    await deps.eventIds.accept(keys);
    return keys.map(() => undefined);
  }, 1000);
  const produce = createBatcher(
    async (events: EventRecord[]) => {
      await deps.producer.send(
        TOPIC.events,
        events.map((e) => {
          const headers = tracing && traceHeaders.get(e);
          return headers ? { key: e.tenant_id, value: e, headers } : { key: e.tenant_id, value: e };
        }),
      );
      return events.map(() => undefined);
    },
    500,
    deps.lingerMs,
  );

  async function publish(event: EventRecord, callerChoseId: boolean): Promise<PublishResult> {
    const started = performance.now();
    const { exists, destinations } = await deps.routing.get(event.tenant_id);
    if (!exists) throw new AppError('TENANT_NOT_FOUND');
    const key = { tenant_id: event.tenant_id, id: event.id };
    // Generated ids are new by construction; only caller-chosen ids can repeat.
    let reservation: Reservation = callerChoseId ? await reserve(key) : 'new';
    // A repeat racing its original waits for the original's outcome: duplicate once it is accepted,
    // new (ours to publish) if it failed and was released.
    for (const ms of IN_FLIGHT_WAITS_MS) {
      if (reservation !== 'in_flight') break;
      await new Promise((r) => setTimeout(r, ms));
      reservation = await reserve(key);
    }
    if (reservation === 'duplicate') {
      deps.log.info(
        {
          event_id: event.id,
          tenant_id: event.tenant_id,
          topic: event.topic,
          outcome: 'duplicate',
          duration_ms: Math.round(performance.now() - started),
        },
        'publish',
      );
      return { id: event.id, duplicate: true, destination_ids: [] };
    }
    if (reservation === 'in_flight') throw new AppError('EVENT_CONFLICT');
    try {
      await withDeadline(produce(event), deps.timeoutMs);
    } catch (err) {
      if (callerChoseId) await deps.eventIds.release([key]).catch(() => undefined);
      throw new AppError('SERVICE_UNAVAILABLE', 'The event could not be accepted; nothing was published. Try again.', undefined, {
        cause: err,
      });
    }
    if (callerChoseId) {
      // Not awaited: until it lands (or the router claims the event) a repeat waits (IN_FLIGHT_WAITS_MS).
      accept(key).catch((err: unknown) => deps.log.warn({ err, event_id: event.id }, 'marking event accepted failed'));
    }
    const destinationIds = destinations
      .filter(
        (d) =>
          d.disabled_at === null &&
          (event.destination_id ? d.id === event.destination_id : matchesTopic(d.topics, event.topic) && matchesFilter(d.filter, event)),
      )
      .map((d) => d.id);
    deps.log.info(
      {
        event_id: event.id,
        tenant_id: event.tenant_id,
        topic: event.topic,
        outcome: 'accepted',
        destinations: destinationIds.length,
        duration_ms: Math.round(performance.now() - started),
      },
      'publish',
    );
    return { id: event.id, duplicate: false, destination_ids: destinationIds };
  }

  if (!tracing) return publish;
  return async function tracedPublish(event: EventRecord, callerChoseId: boolean): Promise<PublishResult> {
    const span = tracing.span('publish', 'producer', undefined, {
      'messaging.system': 'kafka',
      'messaging.operation.type': 'send',
      'messaging.destination.name': TOPIC.events.name,
      'switchyard.event_id': event.id,
      'switchyard.tenant_id': event.tenant_id,
      'switchyard.topic': event.topic,
    });
    traceHeaders.set(event, span.headers());
    try {
      const result = await publish(event, callerChoseId);
      span.set({ 'switchyard.duplicate': result.duplicate, 'switchyard.destinations': result.destination_ids.length });
      span.end();
      return result;
    } catch (err) {
      span.end(err);
      throw err;
    }
  };
}

/** `work`, or a rejection once `ms` have passed (work goes on; its own failure is then dropped). */
function withDeadline<T>(work: Promise<T>, ms: number | undefined): Promise<T> {
  if (!ms) return work;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Kafka did not acknowledge the write within ${ms} ms`)), ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
