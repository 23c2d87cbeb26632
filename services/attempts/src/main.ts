// Attempts process: persists events and attempts to Postgres in batches, committing offsets after each write.
import { AttemptStore } from '@switchyard/shared/db/stores/attempts.ts';
import { TOPIC } from '@switchyard/shared/kafka/topics.ts';
import type { AttemptRecord, EventRecord } from '@switchyard/shared/model/index.ts';
import { onShutdown } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';

const rt = await createRuntime('attempts');
const store = new AttemptStore(rt.db);

// Events are stored as they are published, so they are listable before their first attempt.
await rt.bus.consume<EventRecord>({
  groupId: 'attempts-events',
  topics: [TOPIC.events],
  async handleBatch(records) {
    await store.insertEvents(records.map((r) => r.value));
  },
});
await rt.bus.consume<AttemptRecord>({
  groupId: 'attempts',
  topics: [TOPIC.attempts],
  async handleBatch(records) {
    await store.insertAttempts(records.map((r) => r.value));
  },
});
rt.logger.info('attempts service consuming');
onShutdown(rt.logger, () => rt.close());
