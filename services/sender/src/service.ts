// Sender: consumes the delivery topics of SENDER_TYPES, delivers, writes each attempt, and moves failed
// deliveries through the retry tiers until they are due again; wired to a runtime (main.ts: its own
// process; services/embedded: every service in one process).
import { createBatcher } from '@switchyard/shared/batcher.ts';
import type { Config } from '@switchyard/shared/config/index.ts';
import { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { SenderPresenceStore } from '@switchyard/shared/db/stores/sender-presence.ts';
import { isDestinationType } from '@switchyard/shared/destinations/registry.ts';
import type { BusConsumer, BusProducer, InRecord, KeyedConsumer, OutRecord } from '@switchyard/shared/bus/index.ts';
import { GROUP, RETRY_TIERS_SECONDS, TOPIC } from '@switchyard/shared/bus/topics.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import { createLogSummary, type LogSummary } from '@switchyard/shared/log-summary.ts';
import { metrics, observeAttempt, observeRetry } from '@switchyard/shared/metrics.ts';
import type {
  AttemptRecord,
  DeliveryRecord,
  DestinationChange,
  DestinationSnapshot,
  DestinationType,
} from '@switchyard/shared/model/index.ts';
import { destinationKey } from '@switchyard/shared/model/index.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import type { TraceSpan } from '@switchyard/shared/tracing.ts';
import { type CurrentState, DESTINATION_STATE_TTL_MS, DestinationState } from './destination-state.ts';
import { createDeliveryHandler, type Handled } from './handler.ts';
import { createDeliveryProgress, createMadeHere, type DeliveryProgress, isRetry, type MadeHere, madeKey } from './delivery-progress.ts';
import { tierFor } from './backoff.ts';
import { createRetryScheduler } from './retry-scheduler.ts';
import { type ClientCache, createClientCache } from './clients.ts';
import { createEgressAgent, parseAllowList } from './egress.ts';
import { keyConcurrencyOf, partitionConcurrencyOf, SENDERS } from './senders.ts';
import { createRateGate, type RateGate } from './controls/rate-limit.ts';
import { createCancellations } from './controls/scheduled.ts';
import { createOrderedDelivery, isOrdered, type OrderedDelivery } from './controls/ordered.ts';
import { createOrderedStore } from './controls/ordered-store.ts';

/** A failed attempt in a few words, for its span's status: the HTTP status or the reason, and the message. */
function failureMessage(attempt: { code: string; response_data?: unknown }): string {
  const r = (attempt.response_data ?? {}) as { reason?: unknown; message?: unknown };
  const what = typeof r.reason === 'string' ? r.reason : `code ${attempt.code}`;
  return typeof r.message === 'string' && r.message ? `${what}: ${r.message.slice(0, 200)}` : what;
}

/** Awaits `p`, ending `span` failed when it rejects. */
async function endOnError<T>(span: TraceSpan, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    span.end(err);
    throw err;
  }
}

/** How often clients of deleted, disabled or idle destinations are looked for and closed. */
const SWEEP_MS = 60_000;
/** How often this sender marks its types present (pending-reason.ts in the gateway reads them). */
const PRESENCE_MS = 30_000;

type Topic = Parameters<BusProducer['send']>[0];
type Senders = Partial<Record<DestinationType, ClientCache>>;
type RetryScheduler = ReturnType<typeof createRetryScheduler>;

/** One client cache per type, all behind one egress agent; refuses a type no sender implements. */
function createSenders(config: Config, logger: Logger, types: DestinationType[]) {
  // Refused before anything is touched, so deliveries of that type wait for a sender that can.
  for (const t of types) if (!SENDERS[t]) throw new Error(`delivery for type ${t} is not implemented yet`);
  const allow = parseAllowList(config.EGRESS_ALLOW);
  const agent = createEgressAgent({ allow, connectTimeoutMs: config.DELIVERY_TIMEOUT_SECONDS * 1000 });
  const senders: Senders = {};
  for (const t of types) {
    const make = SENDERS[t] as NonNullable<(typeof SENDERS)[typeof t]>;
    senders[t] = createClientCache(make({ config, allow, dispatcher: agent }), {
      onCloseError: (err) => logger.warn({ type: t, err: (err as Error).message }, 'closing a destination client failed'),
    });
  }
  return { senders, agent };
}

/** Closes clients of destinations deleted or disabled since, or idle; a failed look-up waits for the next round. */
function startSweep(senders: Senders, store: DestinationStore, logger: Logger): NodeJS.Timeout {
  const sweep = setInterval(() => {
    for (const cache of Object.values(senders)) {
      cache
        .sweep((destinations) => store.deliverableOf(destinations))
        .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'client sweep failed'));
    }
  }, SWEEP_MS);
  sweep.unref();
  return sweep;
}

/**
 * Each attempt uses its destination as it is now; this instance hears of every change (broadcast),
 * from before its first delivery on.
 */
async function watchDestinations(rt: Runtime, store: DestinationStore) {
  const destinations = new DestinationState({ load: (tenantId, id) => store.routable(tenantId, id), ttlMs: DESTINATION_STATE_TTL_MS });
  const consumer = await rt.bus.consume<DestinationChange>({
    groupId: 'sender-destination-changes',
    topics: [TOPIC.destinationChanges],
    broadcast: true,
    async handle(record) {
      if (record.value && typeof record.value.tenant_id === 'string') destinations.changed(record.value);
      else destinations.clear();
    },
  });
  return { destinations, consumer };
}

/**
 * Longest a record the sender writes waits for others to share its produce request. A delivery's
 * next one does not wait for its attempt's write (a destination's slot is freed once it answers),
 * and the attempts service waits far longer for its batches, so at a moderate rate the attempts of
 * a few router batches share one request instead of a request each (docs/performance.md, "Sender
 * output linger").
 */
const OUTPUT_LINGER_MS = 20;
/**
 * Records that end the linger early: a record waiting to be written still holds its partition's
 * slot (SENDER_CONCURRENCY), so at full speed a long wait would hold up deliveries.
 */
const OUTPUT_LINGER_RECORDS = 16;

/**
 * What the sender writes: attempts, retry tiers and deliveries. Records written while a produce
 * request is in flight go out together in the next one, whatever their topic: the idempotent
 * producer sends one request at a time, so one request per record would cap deliveries at one per
 * round trip.
 */
function createOutput(producer: BusProducer, tracing: boolean) {
  const batcher = createBatcher(
    async (items: Array<{ topic: Topic; record: OutRecord }>) => {
      const byTopic = Map.groupBy(items, (i) => i.topic);
      await producer.sendMany([...byTopic].map(([topic, list]) => ({ topic, records: list.map((i) => i.record) })));
      return items.map(() => undefined);
    },
    1000,
    OUTPUT_LINGER_MS,
    OUTPUT_LINGER_RECORDS,
  );
  const produce = (topic: Topic, record: OutRecord): Promise<void> => batcher({ topic, record });
  // Tracing on only: the trace headers of attempts being written, from their delivery's span.
  const attemptHeaders = new WeakMap<AttemptRecord, Record<string, string>>();
  const attemptRecord = (a: AttemptRecord): OutRecord => {
    const headers = tracing && attemptHeaders.get(a);
    return headers ? { key: a.destination_id, value: a, headers } : { key: a.destination_id, value: a };
  };
  return {
    attemptHeaders,
    emitAttempt: (a: AttemptRecord) => produce(TOPIC.attempts, attemptRecord(a)),
    // Trace headers (tracing on only) travel with a delivery through the retry tiers.
    send: (topic: Topic, d: DeliveryRecord, headers?: Record<string, string>) =>
      produce(
        topic,
        headers && Object.keys(headers).length ? { key: d.destination.id, value: d, headers } : { key: d.destination.id, value: d },
      ),
  };
}

interface DeliveryDeps {
  rt: Runtime;
  handle: (delivery: DeliveryRecord, trace?: Record<string, string>, inPlace?: boolean, after?: number) => Promise<Handled>;
  /** What is stored of a retry's delivery, and the number its attempt takes (delivery-progress.ts). */
  progress: DeliveryProgress;
  /** Deliveries this process made successfully lately (delivery-progress.ts). */
  madeHere: MadeHere;
  scheduler: RetryScheduler;
  attemptHeaders: WeakMap<AttemptRecord, Record<string, string>>;
  summary: LogSummary<'attempts' | 'succeeded' | 'failed' | 'canceled'>;
  /**
   * Rate limits: parks a delivery that is not yet its destination's turn (controls/rate-limit.ts);
   * a canceled one (a scheduled event canceled before it was due) takes no turn.
   */
  rateGate: RateGate;
  /** Ordered destinations: one delivery at a time; a blocked one's deliveries spilled and drained (controls/ordered.ts). */
  inOrder: OrderedDelivery;
}

const COUNTED = { success: 'succeeded', failed: 'failed', canceled: 'canceled' } as const;

/**
 * After an attempt is written: its metrics and summary counts, and its line (a failed one at info,
 * a successful or canceled one at debug: a disabled destination's queued deliveries end canceled
 * by the thousand).
 */
function recordAttempt(deps: DeliveryDeps, delivery: DeliveryRecord, { attempt, outcome }: Handled) {
  const { logger } = deps.rt;
  const type = delivery.destination.type;
  observeAttempt(attempt, delivery.event.deliver_at);
  deps.summary.count('attempts');
  deps.summary.count(COUNTED[attempt.status]);
  // Built only when written: at info only a failure writes its line.
  if (attempt.status === 'failed' || logger.isLevelEnabled('debug'))
    logger[attempt.status === 'failed' ? 'info' : 'debug'](
      {
        attempt_id: attempt.id,
        event_id: attempt.event_id,
        tenant_id: attempt.tenant_id,
        destination_id: attempt.destination_id,
        type,
        attempt_number: attempt.attempt_number,
        manual: attempt.manual,
        status: attempt.status,
        code: attempt.code,
        reason: outcome.response_data?.reason,
        next_attempt_at: attempt.next_attempt_at,
        duration_ms: attempt.duration_ms,
      },
      'attempt',
    );
}

/**
 * Delivers one record of `type`; the returned step writes its attempt once the destination's slot is
 * free. `made` is its `madeKey` when its success is remembered (any but an ordered destination's).
 */
async function deliverOne(deps: DeliveryDeps, type: DestinationType, record: InRecord<DeliveryRecord>, after: number, made?: string) {
  // Under way until its attempt is written: another copy of the delivery waits (createMadeHere).
  const end = made !== undefined && !record.value.manual ? deps.madeHere.start(made) : () => {};
  try {
    return await makeOne(deps, type, record, after, end, made);
  } catch (err) {
    end();
    throw err;
  }
}

async function makeOne(
  deps: DeliveryDeps,
  type: DestinationType,
  record: InRecord<DeliveryRecord>,
  after: number,
  end: () => void,
  made: string | undefined,
) {
  const tracing = deps.rt.tracing;
  // Tracing on only: one span per delivery attempt, from the delivery to its attempt written.
  const span = tracing?.span('deliver', 'consumer', record.headers, {
    'messaging.system': 'kafka',
    'messaging.operation.type': 'process',
    'messaging.destination.name': TOPIC.deliveries[type].name,
    'switchyard.event_id': record.value?.event?.id,
    'switchyard.destination_id': record.key,
    'switchyard.destination_type': type,
  });
  // The retry this attempt may schedule is a child of its span: one trace across the tiers.
  const run = (trace?: Record<string, string>) =>
    isOrdered(record.value) && !record.value.manual
      ? deps.inOrder.deliver(record.value, trace, record, (h) => span && deps.attemptHeaders.set(h.attempt, span.headers()))
      : deps.handle(record.value, trace, false, after);
  const handled = span ? await endOnError(span, run(span.headers())) : await run();
  const { attempt, write } = handled;
  if (span) {
    deps.attemptHeaders.set(attempt, span.headers());
    span.set({
      'switchyard.attempt_number': attempt.attempt_number,
      'switchyard.status': attempt.status,
      'switchyard.code': attempt.code,
    });
    // A failed attempt is the span's failure too (status ERROR), though nothing was thrown.
    if (attempt.status === 'failed') span.fail(failureMessage(attempt));
  }
  // Written once the destination's slot is free again: its next delivery need not wait for Kafka.
  return async () => {
    try {
      if (span) {
        await endOnError(span, write());
        span.end();
      } else await write();
      // Only once written: a write that failed makes the record come again, and it must then be made.
      if (attempt.status === 'success' && made !== undefined) deps.madeHere.add(made);
    } finally {
      end();
    }
    recordAttempt(deps, record.value, handled);
  };
}

/** The consumer of one type's delivery topic, with its per-destination concurrency and health. */
function consumeDeliveries(deps: DeliveryDeps, type: DestinationType): Promise<KeyedConsumer> {
  const { config, tracing } = deps.rt;
  const concurrency = partitionConcurrencyOf(type, config.SENDER_CONCURRENCY);
  return deps.rt.bus.consume<DeliveryRecord>({
    groupId: GROUP.sender(type),
    topics: [TOPIC.deliveries[type]],
    concurrency,
    maxInFlightBytes: config.SENDER_MAX_INFLIGHT_BYTES,
    keyConcurrency: keyConcurrencyOf(type, concurrency, config.DESTINATION_CONCURRENCY),
    keyHealth: {
      stallMs: config.DESTINATION_STALL_MS,
      // A delivery that ran (nearly) into the timeout: measured on another clock than the timer's.
      slowMs: config.DELIVERY_TIMEOUT_SECONDS * 1000 * 0.9,
    },
    keyBacklog: config.DESTINATION_BACKLOG,
    // Not an attempt: the delivery comes back through one retry tier with its number unchanged,
    // after about as long as the destination has been stalled, and longer each time it finds the
    // destination still stalled (scheduler.park), so a dead destination's deliveries do not circle.
    onKeyBacklog: (record, stalledMs) => deps.scheduler.park(record.value, stalledMs, tracing ? record.headers : undefined),
    orderedKey: (record) => isOrdered(record.value),
    // Its destination is its tenant's: slots, stall parking and the ordered pin are per tenant and id
    // (the record key, the id alone, only decides the partition).
    dispatchKey: ({ key, value }) => (value?.destination ? destinationKey(value.destination.tenant_id, value.destination.id) : key),
    async handle(record, clock) {
      if (isOrdered(record.value)) {
        // An ordered destination's delivery that already ended before a crash: not made again (the
        // step returned writes again the attempts that may not have been written).
        const skipped = await deps.inOrder.skip(record.value, record);
        if (skipped) return skipped;
        // Its destination is blocked (it has a spill): appended there, made by the spill's drain.
        if (await deps.inOrder.spills(record)) return async () => {};
      }
      const d = record.value;
      // Made here already, successfully: its parked copy and its own record read again after a
      // crash are one delivery (delivery-progress.ts, createMadeHere). A copy under way is waited for.
      const made = isOrdered(d) ? undefined : madeKey(d);
      const once = made !== undefined && !d.manual;
      if (once) await deps.madeHere.whenDone(made);
      const madeHere = once && deps.madeHere.has(made);
      // A retry: an automatic one whose delivery has succeeded since is not made (no attempt) and
      // takes no turn; either kind is numbered after the last attempt stored, once its turn came.
      // An ordered destination retries in place.
      const stored = !madeHere && isRetry(d) && (d.manual || !isOrdered(d)) ? await deps.progress.read(d) : null;
      if (madeHere || stored?.superseded) {
        metrics.retriesSuperseded.inc({ type });
        deps.rt.logger.debug(
          { event_id: d.event.id, destination_id: d.destination.id, attempt_number: d.attempt_number },
          'retry superseded',
        );
        return async () => {};
      }
      // Not its destination's turn yet: parked until about then, no attempt made.
      if (await deps.rateGate.parked(d, tracing ? record.headers : undefined)) return async () => {};
      // Waiting for its turn (or its scheduled time) was not its destination failing to keep up:
      // the stall clock counts the delivery from its request on.
      clock.restart();
      return deliverOne(deps, type, record, stored ? deps.progress.after(d, stored) : 0, made);
    },
  });
}

/**
 * Tells the gateway which types have a sender, so it can say why a delivery waits (no sender of
 * its type). Every 30 s; a type not seen for SENDER_PRESENCE_STALE_MS counts as not running.
 */
async function startPresence(rt: Runtime, types: DestinationType[]): Promise<NodeJS.Timeout> {
  const store = new SenderPresenceStore(rt.db);
  const present = () => store.mark(types).catch((err: unknown) => rt.logger.warn({ err }, 'marking sender presence failed'));
  await present();
  const presence = setInterval(() => void present(), PRESENCE_MS);
  presence.unref();
  return presence;
}

// For the entry points that start a sender: its settings' check beside the catalogue's.
export { withEgressCheck } from './egress.ts';

export async function start(rt: Runtime): Promise<Service> {
  const consumers: BusConsumer[] = [];
  const { config, logger } = rt;
  // The configuration admits destination types only; this narrows the type.
  const types = config.SENDER_TYPES.filter(isDestinationType);
  // At info, a line a minute of how many attempts there were while attempts are made
  // (docs/operations.md, "Logs"); each attempt's own line is recordAttempt's.
  const summary = createLogSummary(logger, 'sender summary', ['attempts', 'succeeded', 'failed', 'canceled']);
  const { senders, agent } = createSenders(config, logger, types);
  const store = new DestinationStore(rt.db, rt.cipher);
  const sweep = startSweep(senders, store, logger);
  const { destinations, consumer: changes } = await watchDestinations(rt, store);
  consumers.push(changes);
  const output = createOutput(await rt.bus.producer(), Boolean(rt.tracing));
  // The delivery consumers know which destinations they are parking deliveries of right now; for
  // those the scheduler parks a due delivery again itself. Only where this process consumes the
  // destination's delivery partition: elsewhere the delivery goes through its topic as before.
  const deliveryConsumers = new Map<DestinationType, KeyedConsumer>();
  const scheduler = createRetryScheduler({
    deliver: (d, headers) => output.send(TOPIC.deliveries[d.destination.type], d, headers),
    park: (d, tier, headers) => output.send(TOPIC.retries[tier] as (typeof TOPIC.retries)[number], d, headers),
    stalledHere: (d) =>
      deliveryConsumers.get(d.destination.type)?.divertsNow(destinationKey(d.destination.tenant_id, d.destination.id)) ?? 0,
    // A destination that cannot be read now (the database away) keeps its deliveries' turns: the
    // tiers never wait on the database.
    turnLifted: (d) =>
      Promise.resolve(destinations.current(d.destination)).then(
        (state) => !('destination' in state) || !state.destination.rate_limit,
        () => false,
      ),
  });
  const cancellations = createCancellations(rt.db);
  // A scheduled event canceled before it was due is canceled here, whatever its destination's state.
  // Read once a delivery: before its turn (the rate gate, `ahead`), and its attempt takes that answer.
  const currentBy =
    (canceled: (d: DeliveryRecord) => Promise<boolean>) =>
    (s: DestinationSnapshot, d: DeliveryRecord): CurrentState | Promise<CurrentState> =>
      d.event.deliver_at
        ? canceled(d).then((gone) => (gone ? { canceled: 'event_canceled' as const } : destinations.current(s)))
        : destinations.current(s);
  const current = currentBy((d) => cancellations.canceled(d));
  // Rate limits: a delivery waits for its destination's turn, or is parked until about then (not an attempt).
  const rateGate = createRateGate({
    current: currentBy((d) => cancellations.ahead(d)),
    park: (d, dueAt, headers) => scheduler.parkUntil(d, dueAt, headers),
    // An ordered destination's delivery whose turn is far waits in its spill, not in a partition slot.
    spill: (d) => inOrder.spillUntilTurn(d),
  });
  const handle = createDeliveryHandler({
    senders,
    open: (s) => store.openSnapshot(s),
    current,
    emitAttempt: output.emitAttempt,
    scheduleRetry: (d, dueAt, trace) => scheduler.schedule(d, dueAt, trace).then(() => observeRetry(tierFor(dueAt.getTime() - Date.now()))),
    retry: {
      schedule: config.RETRY_SCHEDULE,
      intervalSeconds: config.RETRY_INTERVAL_SECONDS,
      maxRetries: config.RETRY_MAX_LIMIT,
      maxRetryAfterMs: config.RETRY_AFTER_MAX_SECONDS * 1000,
    },
    timeoutMs: config.DELIVERY_TIMEOUT_SECONDS * 1000,
  });
  const progress = createDeliveryProgress(rt.db, logger);
  const inOrder = createOrderedDelivery({
    handle,
    progress,
    turn: (d, signal) => rateGate.turn(d, signal),
    written: (d, h) => recordAttempt(deliveryDeps, d, h),
    emit: output.emitAttempt,
    canceled: async (d) => 'canceled' in (await current(d.destination, d)),
    store: createOrderedStore(rt.db),
    types,
    log: logger,
  });
  destinations.onChange((c) => inOrder.changed(c));
  const deliveryDeps: DeliveryDeps = {
    rt,
    handle,
    progress,
    madeHere: createMadeHere(),
    scheduler,
    attemptHeaders: output.attemptHeaders,
    summary,
    rateGate,
    inOrder,
  };
  for (const type of types) {
    const consumer = await consumeDeliveries(deliveryDeps, type);
    deliveryConsumers.set(type, consumer);
    consumers.push(consumer);
  }
  // One scheduler group serves every type: it only moves records between topics.
  consumers.push(
    await rt.bus.consumeDelayed<DeliveryRecord>({
      groupId: GROUP.retryScheduler,
      topics: TOPIC.retries,
      delayMs: (t) => (RETRY_TIERS_SECONDS[TOPIC.retries.indexOf(t as (typeof TOPIC.retries)[number])] ?? 0) * 1000,
      handle: (record) => scheduler.release(record.value, rt.tracing ? record.headers : undefined),
    }),
  );
  const presence = await startPresence(rt, types);
  logger.info({ types }, 'sender consuming');
  return {
    async close() {
      // Consumers finish in-flight deliveries and commit first; then the senders and connections go.
      clearInterval(sweep);
      clearInterval(presence);
      rateGate.close();
      await Promise.all([inOrder.close(), ...consumers.map((c) => c.close())]);
      await Promise.all(Object.values(senders).map((s) => s.close()));
      await agent.close();
      summary.stop();
    },
  };
}
