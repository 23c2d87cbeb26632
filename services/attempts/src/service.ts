// Attempts: stores routed events and attempts in Postgres in batches (offsets committed only after each
// write), and raises alerts on consecutive failures; wired to a runtime (main.ts: its own process;
// services/embedded: every service in one process).
import { startPartitionMaintenance } from '@switchyard/shared/db/partitions.ts';
import { HealthStore } from '@switchyard/shared/db/stores/health.ts';
import { OperationsStore } from '@switchyard/shared/db/stores/operations.ts';
import { PipelineStore } from '@switchyard/shared/db/stores/pipeline.ts';
import type { BusConsumer } from '@switchyard/shared/kafka/index.ts';
import { countOperatorEvents } from '@switchyard/shared/metrics.ts';
import { TOPIC } from '@switchyard/shared/kafka/topics.ts';
import type { AttemptRecord, RoutedRecord } from '@switchyard/shared/model/index.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import { createAlerts } from './alerts.ts';

export async function start(rt: Runtime): Promise<Service> {
  const consumers: BusConsumer[] = [];
  const { config, logger } = rt;
  const store = new PipelineStore(rt.db);
  const health = new HealthStore(rt.db);
  const operations = new OperationsStore(rt.db);
  const producer = await rt.bus.producer();
  const onHealth = createAlerts({
    threshold: config.ALERT_CONSECUTIVE_FAILURE_COUNT,
    autoDisable: config.ALERT_AUTO_DISABLE_DESTINATION,
    // Records why (destination health in the API shows it).
    disable: (tenantId, destinationId) => operations.autoDisable(tenantId, destinationId),
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
        const added = await store.storeAttempts(records.map((r) => r.value));
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
      await partitions.stop();
      await Promise.all(consumers.map((c) => c.close()));
    },
  };
}
