// Attempts: stores routed events and attempts in Postgres in batches (offsets committed only after each
// write), and raises alerts on consecutive failures; wired to a runtime (main.ts: its own process;
// services/embedded: every service in one process).
import { startTenantErasure } from '@switchyard/shared/db/erasure.ts';
import { startPartitionMaintenance } from '@switchyard/shared/db/partitions.ts';
import { HealthStore } from './health-store.ts';
import { RecentKeys } from '@switchyard/shared/recent-keys.ts';
import { OperationsStore } from '@switchyard/shared/db/stores/operations.ts';
import { PipelineStore } from '@switchyard/shared/db/stores/pipeline.ts';
import type { BusConsumer, BusProducer, InRecord } from '@switchyard/shared/bus/index.ts';
import { countOperatorEvents } from '@switchyard/shared/metrics.ts';
import { GROUP, TOPIC } from '@switchyard/shared/bus/topics.ts';
import type { AttemptRecord, DestinationChange, RoutedRecord } from '@switchyard/shared/model/index.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import type { Tracing } from '@switchyard/shared/tracing.ts';
import { createAlerts } from './alerts.ts';
import { reportScheduledBacklog } from './scheduled-backlog.ts';
import { isTransient, writeIsolating } from './isolate.ts';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Why a record of the routed topic cannot be what our router writes, or null. */
function malformedRouted(r: InRecord<RoutedRecord>): string | null {
  if (r.decodeError) return `invalid JSON: ${r.decodeError}`;
  const v = r.value as unknown;
  if (!isObject(v) || !isObject(v.event) || !Array.isArray(v.matched_destination_ids) || !Array.isArray(v.skipped_destination_ids))
    return 'not a routed record';
  return null;
}

/** Why a record of the attempts topic cannot be what our senders write, or null. */
function malformedAttempt(r: InRecord<AttemptRecord>): string | null {
  if (r.decodeError) return `invalid JSON: ${r.decodeError}`;
  const v = r.value as unknown;
  if (!isObject(v) || typeof v.id !== 'string' || (v.response_data !== null && v.response_data !== undefined && !isObject(v.response_data)))
    return 'not an attempt record';
  return null;
}

/** Longest an attempt waits for its event row before it is stored anyway. */
const EVENT_WAIT_MS = 30_000;
/** Keys of recently stored events kept in memory (about 100 bytes each: 2 MB), seconds of traffic at full load. */
const RECENT_EVENTS_MAX = 20_000;
/**
 * How often an attempt waiting for its event asks the events table: a primary-key probe per attempt,
 * each a round trip and a statement, so not every few ms; the events this instance stores are seen
 * without it (docs/performance.md, "Attempts service and Postgres").
 */
const EVENT_TABLE_POLL_MS = 200;
/**
 * Tracing on only: `store` in one span per attempt record, a child of the delivery span whose
 * traceparent the record carries, ended when the batch is written (and the records committable).
 */
async function traced(tracing: Tracing, records: InRecord<AttemptRecord>[], store: (rs: InRecord<AttemptRecord>[]) => Promise<void>) {
  const spans = records.map((r) =>
    tracing.span('store attempt', 'consumer', r.headers, {
      'messaging.system': 'kafka',
      'messaging.operation.type': 'process',
      'messaging.destination.name': TOPIC.attempts.name,
      'messaging.batch.message_count': records.length,
      'switchyard.attempt_id': typeof r.value?.id === 'string' ? r.value.id : undefined,
      'switchyard.event_id': typeof r.value?.event_id === 'string' ? r.value.event_id : undefined,
    }),
  );
  try {
    await store(records);
  } catch (err) {
    for (const s of spans) s.end(err);
    throw err;
  }
  for (const s of spans) s.end();
}

/**
 * Alerts on consecutive failures (alerts.ts): operator events to their topic, the table (listable
 * through the API) and the optional callback, and auto-disabling a destination when configured.
 */
function createOperatorAlerts(rt: Runtime, producer: BusProducer) {
  const { config, logger } = rt;
  const operations = new OperationsStore(rt.db);
  return createAlerts({
    threshold: config.ALERT_CONSECUTIVE_FAILURE_COUNT,
    autoDisable: config.ALERT_AUTO_DISABLE_DESTINATION,
    async disable(tenantId, destinationId) {
      // Records why (destination health in the API shows it).
      const disabled = await operations.autoDisable(tenantId, destinationId);
      // The senders stop delivering to it now, not when its queued deliveries run out.
      if (disabled) {
        const change: DestinationChange = {
          tenant_id: tenantId,
          destination_id: destinationId,
          change: 'disabled',
          time: new Date().toISOString(),
        };
        await producer.send(TOPIC.destinationChanges, [{ key: tenantId, value: change }]);
      }
      return disabled;
    },
    emit: (events) =>
      producer
        .send(
          TOPIC.operatorEvents,
          events.map((e) => ({ key: e.destination_id, value: e })),
        )
        .then(() => operations.addEvents(events)) // listable through the API too
        .then(() => countOperatorEvents(events)),
    callback: config.OPERATOR_CALLBACK_URL ? { url: config.OPERATOR_CALLBACK_URL, secret: config.OPERATOR_CALLBACK_SECRET } : undefined,
    log: logger,
  });
}

/**
 * A record that can never be stored goes to the dead-letter topic with the reason, so its
 * partition moves on (docs/architecture.md, "Poison records").
 */
function createDeadLetters(producer: BusProducer, logger: Logger) {
  let deadLetters = 0;
  async function deadLetter(r: InRecord<unknown>, reason: string) {
    await producer.send(TOPIC.storeDeadLetter, [
      {
        key: r.key,
        value: r.raw ?? Buffer.from(JSON.stringify(r.value ?? null)),
        headers: { 'x-dead-letter-reason': reason.slice(0, 1000), 'x-dead-letter-source': `${r.topic}/${r.partition}/${r.offset}` },
      },
    ]);
    deadLetters++;
    logger.warn(
      { topic: r.topic, partition: r.partition, offset: r.offset, reason, outcome: 'dead_letter', dead_letters_total: deadLetters },
      'record cannot be stored',
    );
  }
  /** The records `why` finds nothing wrong with; the others are dead-lettered. */
  async function takeMalformed<T>(records: InRecord<T>[], why: (r: InRecord<T>) => string | null): Promise<InRecord<T>[]> {
    const ok: InRecord<T>[] = [];
    for (const r of records) {
      const reason = why(r);
      if (reason) await deadLetter(r as InRecord<unknown>, reason);
      else ok.push(r);
    }
    return ok;
  }
  return { deadLetter, takeMalformed };
}

/**
 * Read-your-write for include=event: an attempt is stored only once its event row is (the router
 * sends the routed event before the delivery, so it is at most a batch of the other consumer
 * away). Bounded, so an event that can never arrive (its partition dropped by retention) does not
 * hold attempts back for long; on shutdown (`closing`) the batch is stored as it is.
 */
function createEventWait(store: PipelineStore, logger: Logger, closing: () => boolean) {
  // Events this instance stored lately: their attempts need no look-up (the common case; another
  // instance's events, or any after a restart, are looked up in the table).
  const stored = new RecentKeys(RECENT_EVENTS_MAX);
  const remember = (key: string) => stored.add(key);
  // A look-up the database refuses for good (a value in the batch it cannot read) answers "none
  // missing": the batch is written without waiting, isolated (isolate.ts), rather than retried forever.
  const missingEvents = async (attempts: AttemptRecord[]) => {
    try {
      return await store.missingEvents(attempts);
    } catch (err) {
      if (isTransient(err)) throw err;
      logger.warn({ err }, 'looking up the events of attempts failed; storing them without waiting');
      return [];
    }
  };
  const eventsStored = async (attempts: AttemptRecord[]) => {
    const deadline = Date.now() + EVENT_WAIT_MS;
    const unknown = (list: AttemptRecord[]) => list.filter((a) => !stored.has(`${a.tenant_id}\u0000${a.event_id}`));
    let waiting = await missingEvents(unknown(attempts));
    let asked = Date.now();
    for (let pause = 5; waiting.length && !closing() && Date.now() < deadline; pause = Math.min(pause * 2, 200)) {
      await new Promise((r) => setTimeout(r, pause));
      // Mostly stored meanwhile by this instance's own routed consumer, which is seen here at once;
      // the table (another instance's events) is asked at most every EVENT_TABLE_POLL_MS.
      waiting = unknown(waiting);
      if (waiting.length && Date.now() - asked >= EVENT_TABLE_POLL_MS) {
        waiting = await missingEvents(waiting);
        asked = Date.now();
      }
    }
    if (waiting.length && !closing()) {
      logger.warn({ attempts: waiting.length, event_id: waiting[0]?.event_id }, 'attempts stored before their events');
      // Given up once: later attempts of these events (a deleted tenant's, say) do not wait again.
      for (const a of waiting) remember(`${a.tenant_id}\u0000${a.event_id}`);
    }
  };
  return { remember, eventsStored };
}

interface StoreDeps {
  rt: Runtime;
  store: PipelineStore;
  letters: ReturnType<typeof createDeadLetters>;
  events: ReturnType<typeof createEventWait>;
  onHealth: ReturnType<typeof createAlerts>;
}

/**
 * The routed topic's batches: events and their deliveries stored. Behind, each of the two consumers
 * holds about one fetch of records decoded at once (fetchMaxBytes); kafkajs's 10 MiB default took
 * the service to 235 MB catching up (docs/performance.md, "Fetch limits per consumer").
 */
function consumeRouted({ rt, store, letters, events }: StoreDeps): Promise<BusConsumer> {
  return rt.bus.consume<RoutedRecord>({
    groupId: GROUP.attemptsRouted,
    topics: [TOPIC.routed],
    batchWaitMs: rt.config.ATTEMPTS_BATCH_WAIT_MS,
    fetchMaxBytes: rt.config.ATTEMPTS_FETCH_MAX_BYTES,
    async handleBatch(records) {
      await writeIsolating(await letters.takeMalformed(records, malformedRouted), {
        write: async (rs) => {
          await store.storeRouted(rs.map((r) => r.value));
          for (const r of rs) events.remember(`${r.value.event.tenant_id}\u0000${r.value.event.id}`);
          return [];
        },
        deadLetter: (r, reason) => letters.deadLetter(r as InRecord<unknown>, reason),
      });
    },
  });
}

/** The attempts topic's batches: stored, then destination health updated from what was added. */
function consumeAttempts({ rt, store, letters, events, onHealth }: StoreDeps): Promise<BusConsumer> {
  const { config } = rt;
  const health = new HealthStore(rt.db);
  async function storeAttempts(records: InRecord<AttemptRecord>[]): Promise<void> {
    const valid = await letters.takeMalformed(records, malformedAttempt);
    // Read-your-write: an attempt is stored only once its event row is (createEventWait).
    await events.eventsStored(valid.map((r) => r.value));
    const added = await writeIsolating(valid, {
      write: (rs) => store.storeAttempts(rs.map((r) => r.value)),
      // An attempt is the record of a delivery that happened: when even its escaped response
      // cannot be stored (nested too deep, say), it is stored without the response, saying why.
      repairs: (r) => {
        const rd = r.value.response_data;
        if (rd === null) return [];
        const status = typeof rd.status === 'number' ? { status: rd.status } : {};
        return [{ ...r, value: { ...r.value, response_data: { ...status, body: null, unstorable: true } } }];
      },
      deadLetter: (r, reason) => letters.deadLetter(r as InRecord<unknown>, reason),
    });
    await onHealth(await health.apply(added, config.ALERT_CONSECUTIVE_FAILURE_COUNT));
  }
  return rt.bus.consume<AttemptRecord>({
    groupId: GROUP.attempts,
    topics: [TOPIC.attempts],
    batchWaitMs: config.ATTEMPTS_BATCH_WAIT_MS,
    fetchMaxBytes: config.ATTEMPTS_FETCH_MAX_BYTES,
    async handleBatch(records) {
      if (rt.tracing) return traced(rt.tracing, records, storeAttempts);
      return storeAttempts(records);
    },
  });
}

export async function start(rt: Runtime): Promise<Service> {
  const consumers: BusConsumer[] = [];
  const { config, logger } = rt;
  const store = new PipelineStore(rt.db);
  const producer = await rt.bus.producer();
  const onHealth = createOperatorAlerts(rt, producer);
  const letters = createDeadLetters(producer, logger);
  let closing = false;
  const events = createEventWait(store, logger, () => closing);
  const deps: StoreDeps = { rt, store, letters, events, onHealth };
  consumers.push(await consumeRouted(deps));
  consumers.push(await consumeAttempts(deps));
  // Time partitions of events, deliveries and attempts: created ahead, dropped after RETENTION_DAYS.
  const partitions = startPartitionMaintenance(rt.db, {
    retentionDays: config.RETENTION_DAYS,
    intervalDays: config.PARTITION_INTERVAL_DAYS,
    aheadDays: config.PARTITION_AHEAD_DAYS,
    log: logger,
  });
  // Deleted tenants' events, deliveries, attempts and idempotency keys, also what a gateway left.
  const erasure = startTenantErasure(rt.db, { everyMs: 60_000, log: logger });
  const stopBacklog = reportScheduledBacklog(rt.db);
  logger.info('attempts service consuming');
  return {
    async close() {
      closing = true;
      stopBacklog();
      await partitions.stop();
      await erasure.stop();
      await Promise.all(consumers.map((c) => c.close()));
    },
  };
}
