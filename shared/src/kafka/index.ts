// The Kafka adapter of the Bus port (../bus/index.ts), which the embedded log (../embedded/)
// implements too, so service code is the same in both modes. All of the bus's kafkajs code is in
// this folder: the client and what its modules share (client.ts), topics, lag and readiness
// (admin.ts), the producer (producer.ts), the consumer (consumer.ts), the retry tiers' delayed
// consumer (delayed.ts), a consumer's life in its group (group.ts), the partitioner (partitioner.ts)
// and the changes to kafkajs's internals (kafkajs/), which load with it.
import './kafkajs/index.ts';
import type { Bus } from '../bus/index.ts';
import { allTopics } from '../bus/topics.ts';
import { ensureTopicsOnce, lag } from './admin.ts';
import { createContext, type KafkaBusOptions } from './client.ts';
import { consume } from './consumer.ts';
import { consumeDelayed } from './delayed.ts';
import { createProducer } from './producer.ts';

export { ReplicationError } from './admin.ts';
export { DEFAULT_MAX_MESSAGE_BYTES, type KafkaBusOptions } from './client.ts';
export { DELAYED_FETCH_LIMITS } from './delayed.ts';
export { runKept, SESSION_TIMEOUT_MS } from './group.ts';
export { splitBySize } from './producer.ts';

export function createKafkaBus(opts: KafkaBusOptions): Bus {
  if (opts.minInsyncReplicas && opts.minInsyncReplicas > opts.replicationFactor)
    throw new Error(
      `KAFKA_MIN_INSYNC_REPLICAS (${opts.minInsyncReplicas}) is above KAFKA_REPLICATION_FACTOR (${opts.replicationFactor}): no write could ever be accepted`,
    );
  const ctx = createContext(opts);
  return {
    async ensureTopics(topics = allTopics()) {
      await ctx.atStart('creating topics', () => ensureTopicsOnce(ctx, topics));
    },
    producer: () => createProducer(ctx),
    consume: (o) => consume(ctx, o),
    consumeDelayed: (o) => consumeDelayed(ctx, o),
    lag: (groups) => lag(ctx, groups),
    async ping() {
      await (await ctx.adminOnce()).describeCluster();
    },
    async close() {
      await Promise.allSettled(ctx.consumers.splice(0).map((h) => h.close()));
      await Promise.allSettled(ctx.producers.splice(0).map((h) => h.close()));
      const admin = ctx.keptAdmin();
      if (admin) await (await admin.catch(() => null))?.disconnect();
    },
  };
}
