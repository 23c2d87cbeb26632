// Attempts: stores routed events and attempts in Postgres in batches (offsets committed only after each
// write), and raises alerts on consecutive failures; wired to a runtime (main.ts: its own process;
// services/embedded: every service in one process).
import { startPartitionMaintenance } from '@switchyard/shared/db/partitions.ts';
import { HealthStore } from '@switchyard/shared/db/stores/health.ts';
import { PipelineStore } from '@switchyard/shared/db/stores/pipeline.ts';
import type { BusConsumer } from '@switchyard/shared/kafka/index.ts';
import { TOPIC } from '@switchyard/shared/kafka/topics.ts';
import type { AttemptRecord, RoutedRecord } from '@switchyard/shared/model/index.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import { createAlerts } from './alerts.ts';

/** Longest an attempt waits for its event row before it is stored anyway. */
const EVENT_WAIT_MS = 30_000;
/** Keys of recently stored events kept in memory (about 100 bytes each: 2 MB), seconds of traffic at full load. */
const RECENT_EVENTS_MAX = 20_000;

export async function start(rt: Runtime): Promise<Service> {
  const consumers: BusConsumer[] = [];
  const { config, logger } = rt;
  const store = new PipelineStore(rt.db);
  const health = new HealthStore(rt.db);
  const producer = await rt.bus.producer();
  const onHealth = createAlerts({
    threshold: config.ALERT_CONSECUTIVE_FAILURE_COUNT,
    autoDisable: config.ALERT_AUTO_DISABLE_DESTINATION,
    async disable(tenantId, destinationId) {
      const n = await rt
        .db('destinations')
        .where({ tenant_id: tenantId, id: destinationId })
        .whereNull('disabled_at')
        .update({ disabled_at: rt.db.fn.now(), updated_at: rt.db.fn.now() });
      return n > 0;
    },
    emit: (events) =>
      producer.send(
        TOPIC.operatorEvents,
        events.map((e) => ({ key: e.destination_id, value: e })),
      ),
    callback: config.OPERATOR_CALLBACK_URL ? { url: config.OPERATOR_CALLBACK_URL, secret: config.OPERATOR_CALLBACK_SECRET } : undefined,
    log: logger,
  });

  let closing = false;
  // Events this instance stored lately: their attempts need no look-up (the common case; another
  // instance's events, or any after a restart, are looked up in the table).
  const stored = new Set<string>();
  const remember = (key: string) => {
    stored.add(key);
    if (stored.size > RECENT_EVENTS_MAX) stored.delete(stored.values().next().value as string);
  };
  /**
   * Read-your-write for include=event: an attempt is stored only once its event row is (the router
   * sends the routed event before the delivery, so it is at most a batch of the other consumer
   * away). Bounded, so an event that can never arrive (its partition dropped by retention) does not
   * hold attempts back for long; on shutdown the batch is stored as it is.
   */
  const eventsStored = async (attempts: AttemptRecord[]) => {
    const deadline = Date.now() + EVENT_WAIT_MS;
    const unknown = attempts.filter((a) => !stored.has(`${a.tenant_id}\u0000${a.event_id}`));
    let waiting = await store.missingEvents(unknown);
    for (let pause = 5; waiting.length && !closing && Date.now() < deadline; pause = Math.min(pause * 2, 200)) {
      await new Promise((r) => setTimeout(r, pause));
      waiting = await store.missingEvents(waiting);
    }
    if (waiting.length && !closing) {
      logger.warn({ attempts: waiting.length, event_id: waiting[0]?.event_id }, 'attempts stored before their events');
      // Given up once: later attempts of these events (a deleted tenant's, say) do not wait again.
      for (const a of waiting) remember(`${a.tenant_id}\u0000${a.event_id}`);
    }
  };

  // Behind, each consumer holds about one fetch of records decoded at once (fetchMaxBytes); kafkajs's
  // 10 MiB default took the service to 235 MB catching up (bench/results/2026-11-22-analysis.md,
  // change 39).
  consumers.push(
    await rt.bus.consume<RoutedRecord>({
      groupId: 'attempts-routed',
      topics: [TOPIC.routed],
      batchWaitMs: config.ATTEMPTS_BATCH_WAIT_MS,
      fetchMaxBytes: config.ATTEMPTS_FETCH_MAX_BYTES,
      async handleBatch(records) {
        await store.storeRouted(records.map((r) => r.value));
        for (const r of records) remember(`${r.value.event.tenant_id}\u0000${r.value.event.id}`);
      },
    }),
  );
  consumers.push(
    await rt.bus.consume<AttemptRecord>({
      groupId: 'attempts',
      topics: [TOPIC.attempts],
      batchWaitMs: config.ATTEMPTS_BATCH_WAIT_MS,
      fetchMaxBytes: config.ATTEMPTS_FETCH_MAX_BYTES,
      async handleBatch(records) {
        const attempts = records.map((r) => r.value);
        await eventsStored(attempts);
        const added = await store.storeAttempts(attempts);
        await onHealth(await health.apply(added, config.ALERT_CONSECUTIVE_FAILURE_COUNT));
      },
    }),
  );
  // Time partitions of events, deliveries and attempts: created ahead, dropped after RETENTION_DAYS.
  const partitions = startPartitionMaintenance(rt.db, {
    retentionDays: config.RETENTION_DAYS,
    intervalDays: config.PARTITION_INTERVAL_DAYS,
    aheadDays: config.PARTITION_AHEAD_DAYS,
    log: logger,
  });
  logger.info('attempts service consuming');
  return {
    async close() {
      closing = true;
      await partitions.stop();
      await Promise.all(consumers.map((c) => c.close()));
    },
  };
}
