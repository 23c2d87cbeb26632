// Attempts: stores routed events and attempts in Postgres in batches (offsets committed only after each
// write), and raises alerts on consecutive failures; wired to a runtime (main.ts: its own process;
// services/embedded: every service in one process).
import { startTenantErasure } from '@switchyard/shared/db/erasure.ts';
import { startPartitionMaintenance } from '@switchyard/shared/db/partitions.ts';
import { HealthStore } from '@switchyard/shared/db/stores/health.ts';
import { PipelineStore } from '@switchyard/shared/db/stores/pipeline.ts';
import type { BusConsumer } from '@switchyard/shared/kafka/index.ts';
import { TOPIC } from '@switchyard/shared/kafka/topics.ts';
import type { AttemptRecord, DestinationChange, RoutedRecord } from '@switchyard/shared/model/index.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import { createAlerts } from './alerts.ts';

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
      // The senders stop delivering to it now, not when its queued deliveries run out.
      if (n > 0) {
        const change: DestinationChange = {
          tenant_id: tenantId,
          destination_id: destinationId,
          change: 'disabled',
          time: new Date().toISOString(),
        };
        await producer.send(TOPIC.destinationChanges, [{ key: tenantId, value: change }]);
      }
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
  // Deleted tenants' events, deliveries, attempts and idempotency keys, also what a gateway left.
  const erasure = startTenantErasure(rt.db, { everyMs: 60_000, log: logger });
  logger.info('attempts service consuming');
  return {
    async close() {
      await partitions.stop();
      await erasure.stop();
      await Promise.all(consumers.map((c) => c.close()));
    },
  };
}
