// The Kafka bus's delayed consumer (the retry tiers): a partition whose head is not due yet is
// paused, its fetched records dropped, and resumed at the head's due time plus slack.
import type { Consumer, ConsumerRunConfig, EachBatchPayload } from 'kafkajs';
import { DELAYED_FETCH_MAX_WAIT_MS, DELAYED_RELEASE_SLICE, releaseSlackMs, releaseSlice } from '../bus/consume.ts';
import type { BusConsumer, DelayedConsumeOptions } from '../bus/index.ts';
import { type KafkaContext, toInRecord } from './client.ts';
import { firstJoin, runKept, SESSION_TIMEOUT_MS } from './group.ts';
import { adaptFetchWait, IDLE_FETCH_WAIT_MS } from './kafkajs/fetch-wait.ts';

/**
 * kafkajs's fetch limits for a delayed consumer (the retry tiers): 2 MiB a fetch, an eighth of it a
 * partition (kafkajs's defaults: 10 MiB and 1 MiB). A resumed tier needs only its records now due,
 * and the rest of a fetch is dropped at the next pause, so large fetches only held memory: in the
 * benchmark's hanging phase the sender's largest buffers in flight fell by 15 MB and its peak RSS by
 * 13-26 MB with these, at the same CPU and throughput (docs/performance.md, "Fetch limits per
 * consumer"). A record batch larger than either limit still comes back whole, alone (Kafka's fetch rules
 * since KIP-74).
 */
export const DELAYED_FETCH_LIMITS = { maxBytes: 2 * 1024 * 1024, maxBytesPerPartition: 256 * 1024 } as const;

/** What one delayed consumer's batch handler works with. */
interface DelayedRun<T> {
  o: DelayedConsumeOptions<T>;
  consumer: Consumer;
  delayOf: Map<string, number>;
  timers: Set<NodeJS.Timeout>;
  closing: () => boolean;
}

/** Releases a fetched batch's due records, then pauses the partition until the next one is due. */
async function releaseDue<T>(r: DelayedRun<T>, payload: EachBatchPayload): Promise<void> {
  const { batch, resolveOffset, heartbeat, pause, isRunning, isStale } = payload;
  const delay = r.delayOf.get(batch.topic) ?? 0;
  const now = Date.now();
  const firstLater = batch.messages.findIndex((m) => Number(m.timestamp) + delay > now);
  const due = firstLater < 0 ? batch.messages : batch.messages.slice(0, firstLater);
  // Due records are released together, a slice at a time, with one commit per slice. A
  // failure is thrown after committing up to it: kafkajs fetches the batch again from there.
  for (let i = 0; i < due.length; i += DELAYED_RELEASE_SLICE) {
    if (r.closing() || !isRunning() || isStale()) return;
    await releaseSlice(
      due.slice(i, i + DELAYED_RELEASE_SLICE),
      (m) => r.o.handle(toInRecord<T>(batch.topic, batch.partition, m)),
      async (last) => {
        resolveOffset(last.offset);
        await r.consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(BigInt(last.offset) + 1n) }]);
      },
    );
    await heartbeat();
  }
  const next = firstLater < 0 ? undefined : batch.messages[firstLater];
  if (next && !r.closing() && isRunning() && !isStale()) {
    // Not due: stop here, come back to this very record when it is. The fetched batch is
    // dropped meanwhile (fetched again on resume), so a long tier holds no records in memory.
    const resume = pause();
    r.consumer.seek({ topic: batch.topic, partition: batch.partition, offset: next.offset });
    const timer = setTimeout(
      () => {
        r.timers.delete(timer);
        if (!r.closing()) resume();
      },
      Number(next.timestamp) + delay + releaseSlackMs(delay) - Date.now(),
    );
    r.timers.add(timer);
  }
}

export async function consumeDelayed<T>(ctx: KafkaContext, o: DelayedConsumeOptions<T>): Promise<BusConsumer> {
  const groupId = `${ctx.opts.topicPrefix}${o.groupId}`;
  // The short wait only while a partition is paused; with none, a long poll (kafkajs/fetch-wait.ts).
  const stopAdapting = adaptFetchWait(groupId, {
    kind: 'delayed',
    minBytes: 1,
    maxWaitMs: DELAYED_FETCH_MAX_WAIT_MS,
    idleWaitMs: IDLE_FETCH_WAIT_MS,
  });
  const consumer: Consumer = ctx.kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    sessionTimeout: SESSION_TIMEOUT_MS,
    heartbeatInterval: 1_000,
    ...DELAYED_FETCH_LIMITS,
    maxWaitTimeInMs: DELAYED_FETCH_MAX_WAIT_MS,
  });
  const groupLog = ctx.opts.log.child({ group: o.groupId });
  const joined = firstJoin(consumer, groupLog);
  let closing = false;
  const r: DelayedRun<T> = {
    o,
    consumer,
    delayOf: new Map(o.topics.map((t) => [ctx.name(t), o.delayMs(t)])),
    timers: new Set<NodeJS.Timeout>(),
    closing: () => closing,
  };
  await consumer.connect();
  for (const t of o.topics)
    await ctx.atStart(`subscribing to ${ctx.name(t)}`, () => consumer.subscribe({ topic: ctx.name(t), fromBeginning: true }));
  const run: ConsumerRunConfig = {
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: 16,
    eachBatch: (payload) => releaseDue(r, payload),
  };
  const stopRestarts = await runKept(consumer, run, groupLog);
  await joined;
  const handle: BusConsumer = {
    async close() {
      closing = true;
      stopRestarts();
      for (const t of r.timers) clearTimeout(t);
      await consumer.disconnect();
      stopAdapting();
    },
  };
  ctx.consumers.push(handle);
  return handle;
}
