import { createBatcher } from '@switchyard/shared/batcher.ts';
import type { EventIdStore, Reservation } from '@switchyard/shared/db/stores/event-ids.ts';
import { AppError } from '@switchyard/shared/errors.ts';
import type { BusProducer } from '@switchyard/shared/bus/index.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import { createLogSummary } from '@switchyard/shared/log-summary.ts';
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

/** The publish's time limit passed (PUBLISH_TIMEOUT_MS): the reason its queued write is taken back with. */
class PublishTimedOut extends Error {}
/** The time limit passed with the write out of the queue, in a request to Kafka. */
const IN_FLIGHT = Symbol('in flight');

/**
 * The publish path: tenant check from memory, a reservation for caller-chosen ids, then the events
 * topic with acks=all. Reservations and Kafka writes are batched across concurrent requests, so a
 * busy gateway makes one database statement and one produce request per batch, not per event.
 *
 * A publish is answered within `timeoutMs` of its start (PUBLISH_TIMEOUT_MS): 202 only once its
 * event is written, else 503 SERVICE_UNAVAILABLE (Retry-After). With the broker away a Kafka write
 * waits out the producer's retries, and writes go one at a time, so without the limit an answer
 * could take several retry rounds (33-49 s were seen). At the limit an event still queued is taken
 * back (never written: the 503 is exact). One whose write is in flight cannot be; the 503 says it
 * may still be written, and a caller-chosen id stays reserved until that write ends (accepted if it
 * succeeds, released if not), so a repeat with the same id is answered `duplicate` or published,
 * never written twice.
 */
export function createPublisher(deps: {
  producer: BusProducer;
  eventIds: EventIdStore;
  routing: RoutingCache;
  log: Logger;
  lingerMs?: number;
  /** Longest a publish takes before it is answered 503 (PUBLISH_TIMEOUT_MS). */
  timeoutMs?: number;
  /** With tracing on, each publish is a span and its event's record carries the traceparent. */
  tracing?: Tracing | null;
}) {
  const tracing = deps.tracing ?? null;
  const timeoutMs = deps.timeoutMs ?? 10_000;
  // The trace headers of events being published (tracing on only): the batcher takes events.
  const traceHeaders = new WeakMap<EventRecord, Record<string, string>>();
  const reserve = createBatcher((keys: Array<{ tenant_id: string; id: string }>) => deps.eventIds.reserve(keys), 1000);
  const accept = createBatcher(async (keys: Array<{ tenant_id: string; id: string }>) => {
    await deps.eventIds.accept(keys);
    return keys.map(() => undefined);
  }, 1000);
  const produce = createBatcher(
    async (events: EventRecord[]): Promise<undefined[]> => {
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
      deps.log.debug(
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
    // What is left of the time limit, counted from the start of the publish.
    const limit = new AbortController();
    const timer = setTimeout(() => limit.abort(new PublishTimedOut()), Math.max(0, timeoutMs - (performance.now() - started)));
    const written = produce(event, limit.signal);
    // Listening after produce's own listener: at the limit a write still queued is taken back
    // first (`written` rejects with PublishTimedOut, and so does the race), then this rejects with
    // IN_FLIGHT, which wins the race only when `written` was already out of the queue.
    const expired = new Promise<never>((_, reject) => limit.signal.addEventListener('abort', () => reject(IN_FLIGHT), { once: true }));
    try {
      await Promise.race([written, expired]);
    } catch (err) {
      if (err === IN_FLIGHT) {
        // The write may still land: a caller-chosen id stays reserved until it ends.
        written
          .then(
            () => (callerChoseId ? accept(key) : undefined),
            () => (callerChoseId ? deps.eventIds.release([key]) : undefined),
          )
          .catch((e: unknown) => deps.log.warn({ err: e, event_id: event.id }, 'settling a timed-out publish failed'));
        deps.log.warn(
          { event_id: event.id, tenant_id: event.tenant_id, timeout_ms: timeoutMs },
          'publish timed out with its Kafka write in flight',
        );
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          `The event could not be confirmed as written within ${timeoutMs} ms; it may still be written. Try again${callerChoseId ? ' with the same id: a repeat of a written event is answered as a duplicate' : ''}.`,
        );
      }
      if (callerChoseId) await deps.eventIds.release([key]).catch(() => undefined);
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        err instanceof PublishTimedOut
          ? `The event could not be written within ${timeoutMs} ms; nothing was published. Try again.`
          : 'The event could not be accepted; nothing was published. Try again.',
        undefined,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
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
    // Each publish's line is at debug; at info, the gateway's summary a minute (app.ts).
    deps.log.debug(
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

/**
 * The publish function, counted into the gateway's info summary (log-summary.ts): each publish's own
 * line is at debug, and a line a minute while events come says how many were accepted, were
 * duplicates or failed (as `switchyard_events_published_total` counts them: an unknown tenant, a
 * conflict, the log unavailable). Written a last time when the app closes.
 */
export function summarisePublishes<A extends unknown[], R extends { duplicate?: boolean }>(
  app: { addHook(name: 'onClose', hook: () => Promise<void>): unknown },
  log: Logger,
  publish: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  const summary = createLogSummary(log, 'gateway summary', ['accepted', 'duplicates', 'failed']);
  app.addHook('onClose', async () => summary.stop());
  return async (...args: A): Promise<R> => {
    try {
      const r = await publish(...args);
      summary.count(r.duplicate ? 'duplicates' : 'accepted');
      return r;
    } catch (err) {
      summary.count('failed');
      throw err;
    }
  };
}
