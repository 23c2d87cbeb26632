// The Kafka bus's consumer (Bus.consume): records one at a time through the keyed dispatch (many in
// flight per partition, offsets committed only below the lowest unfinished one), or a fetch's
// batches merged into one handleBatch call; a broadcast reader per instance for caches.
import { randomUUID } from 'node:crypto';
import type { Consumer, ConsumerRunConfig, EachBatchPayload } from 'kafkajs';
import { coalesceBatches } from '../bus/coalesce.ts';
import { createCommitter, keyedDispatchOf, MERGED_BATCH_MAX_RECORDS } from '../bus/consume.ts';
import type { ConsumeOptions, InRecord, KeyedConsumer } from '../bus/index.ts';
import { retryInPlace } from '../bus/inflight.ts';
import { OffsetTracker } from '../bus/offset-tracker.ts';
import type { Logger } from '../log.ts';
import { type BroadcastReader, type KafkaContext, toInRecord } from './client.ts';
import { firstJoin, runKept, SESSION_TIMEOUT_MS } from './group.ts';
import { adaptFetchWait, IDLE_FETCH_WAIT_MS } from './kafkajs/fetch-wait.ts';

interface PartitionState {
  topic: string;
  partition: number;
  tracker: OffsetTracker;
  committed: string | null;
  waiters: Array<() => void>;
}

/** One consumer's running state: what its batch handler and its close work with. */
interface ConsumerRun<T> {
  o: ConsumeOptions<T>;
  /** By `topic\u0000partition`: the partitions this instance has handled records of since it was assigned them. */
  partitions: Map<string, PartitionState>;
  inflight: Set<Promise<void>>;
  closing: boolean;
  dispatch: ReturnType<typeof keyedDispatchOf<T>>;
  /** The merged batch handler (handleBatch), or null for records one at a time. */
  handleBatch: ((records: InRecord<T>[]) => Promise<void>) | null;
}

function stateOf<T>(run: ConsumerRun<T>, topic: string, partition: number): PartitionState {
  const id = `${topic}\u0000${partition}`;
  let st = run.partitions.get(id);
  if (!st) {
    st = { topic, partition, tracker: new OffsetTracker(), committed: null, waiters: [] };
    run.partitions.set(id, st);
  }
  return st;
}

/** The kafkajs consumer for `o`, and the function that stops its fetch wait following the traffic. */
function openConsumer<T>(ctx: KafkaContext, o: ConsumeOptions<T>): { consumer: Consumer; stopAdapting: () => void } {
  const groupId = `${ctx.opts.topicPrefix}${o.groupId}${o.broadcast ? `.${randomUUID()}` : ''}`;
  // A fetch bounded below the wait's minimum would always wait it out, so half the bound at most.
  const minBytes = o.fetchMaxBytes ? Math.min(1_048_576, Math.floor(o.fetchMaxBytes / 2)) : 1_048_576;
  const consumer: Consumer = ctx.kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    // The loop below heartbeats at least every second, also while it waits for a free slot, so
    // the session need not outlast an attempt. It decides how soon the partitions of an
    // instance that died (SIGKILL, a lost machine) go to the others, and how soon a restarted
    // one consumes again: with 45 s, a restart after SIGKILL waited about that long for its
    // partitions (docs/performance.md).
    sessionTimeout: SESSION_TIMEOUT_MS,
    rebalanceTimeout: 60_000,
    heartbeatInterval: 1_000,
    ...(o.batchWaitMs ? { minBytes, maxWaitTimeInMs: o.batchWaitMs } : {}),
    ...(o.fetchMaxBytes ? { maxBytes: o.fetchMaxBytes, maxBytesPerPartition: o.fetchMaxBytes } : {}),
  });
  // Waiting for fuller batches only while records come; idle, a long poll (kafkajs/fetch-wait.ts).
  const stopAdapting = o.batchWaitMs
    ? adaptFetchWait(groupId, { kind: 'batch', minBytes, maxWaitMs: o.batchWaitMs, idleWaitMs: IDLE_FETCH_WAIT_MS })
    : () => {};
  return { consumer, stopAdapting };
}

/**
 * A broadcast reader commits nothing: its lag is where it is here. At each join (the first, and
 * again after a rebalance or a restart) kafkajs starts it at the log's end, so records from
 * before are not its own: the end read then is where it starts.
 */
function trackBroadcast<T>(ctx: KafkaContext, run: ConsumerRun<T>, consumer: Consumer, log: Logger): BroadcastReader {
  const { o } = run;
  const r: BroadcastReader = {
    from: new Map(),
    handled(topic, partition) {
      const done = run.partitions.get(`${topic}\u0000${partition}`)?.tracker.committable();
      return done === null || done === undefined ? null : Number(done);
    },
  };
  consumer.on(consumer.events.GROUP_JOIN, () => {
    void (async () => {
      const from = new Map<string, number>();
      const a = await ctx.adminOnce();
      for (const t of o.topics)
        for (const e of await a.fetchTopicOffsets(ctx.name(t))) from.set(`${ctx.name(t)}\u0000${e.partition}`, Number(e.high));
      r.from = from;
    })().catch((err: unknown) => log.debug({ err }, 'reading the log end for lag failed; taken at the next scrape'));
  });
  const set = ctx.broadcastReaders.get(o.groupId) ?? new Set();
  set.add(r);
  ctx.broadcastReaders.set(o.groupId, set);
  return r;
}

/** A fetched batch through the merged batch handler, marked done (and committed by the timer) once written. */
async function handleFetchedBatch<T>(run: ConsumerRun<T>, st: PartitionState, payload: EachBatchPayload): Promise<void> {
  const { batch, resolveOffset } = payload;
  const handleBatch = run.handleBatch as NonNullable<typeof run.handleBatch>;
  // Committed by the timer like single records (one commit request per interval, not per batch).
  const records = batch.messages
    .filter((m) => !st.tracker.seen(m.offset))
    .map((m) => toInRecord<T>(batch.topic, batch.partition, m, run.o.keepRaw));
  if (!records.length || run.closing) return;
  // Marked done only once written: a failed batch is fetched again and not skipped as seen.
  const task = handleBatch(records)
    .then(() => {
      for (const r of records) {
        st.tracker.start(r.offset);
        st.tracker.finish(r.offset);
      }
    })
    .finally(() => run.inflight.delete(task));
  run.inflight.add(task);
  await task;
  resolveOffset((records.at(-1) as InRecord<T>).offset);
}

/** A fetched batch's records one at a time through the keyed dispatch, each waiting for a free slot. */
async function dispatchFetched<T>(run: ConsumerRun<T>, st: PartitionState, payload: EachBatchPayload): Promise<void> {
  const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
  const { dispatch } = run;
  for (const m of batch.messages) {
    if (run.closing || !isRunning() || isStale()) break;
    if (st.tracker.seen(m.offset)) {
      resolveOffset(m.offset);
      continue;
    }
    while (!dispatch.hasRoom(st) && !run.closing) {
      await new Promise<void>((r) => {
        void dispatch.roomFreed(st).then(r);
        setTimeout(r, 1000);
      });
      await heartbeat();
    }
    if (run.closing) break;
    resolveOffset(m.offset);
    await dispatch.run(toInRecord<T>(batch.topic, batch.partition, m, run.o.keepRaw), st, run.inflight, m.value?.length ?? 0);
  }
  await heartbeat();
}

/**
 * The per-record dispatch. Our own faults are retried here with backoff until they pass (or the
 * consumer closes): the record stays unfinished, so its offset is not committed and nothing behind
 * it is lost.
 */
function dispatchFor<T>(o: ConsumeOptions<T>, log: Logger, stopped: () => boolean) {
  return keyedDispatchOf(o, {
    untilDone: (what, record) =>
      retryInPlace(what, {
        stopped,
        wait: (ms) => new Promise((r) => setTimeout(r, ms)),
        failed: (err, attempt) =>
          log.error(
            { err, topic: record.topic, partition: record.partition, offset: record.offset, attempt },
            'handler failed; will retry',
          ),
      }),
  });
}

export async function consume<T>(ctx: KafkaContext, o: ConsumeOptions<T>): Promise<KeyedConsumer> {
  const { consumer, stopAdapting } = openConsumer(ctx, o);
  const log = ctx.opts.log.child({ group: o.groupId });
  const run: ConsumerRun<T> = {
    o,
    partitions: new Map(),
    inflight: new Set(),
    closing: false,
    dispatch: dispatchFor(o, log, () => run.closing),
    // One handler call for the batches of several partitions fetched together (coalesce.ts).
    handleBatch: o.handleBatch
      ? coalesceBatches(o.handleBatch.bind(o), MERGED_BATCH_MAX_RECORDS, (err, batches, records) =>
          log.warn({ err, batches, records }, 'merged batch failed; handling its batches one by one'),
        )
      : null,
  };

  // Commits run on a timer and at close, never per record: the committed offset only trails.
  const commit = createCommitter(
    () => run.partitions.values(),
    (due) => consumer.commitOffsets(due.map(({ st, offset }) => ({ topic: st.topic, partition: st.partition, offset }))),
    // A rebalance took the partition away; its new owner resumes from the last commit.
    (err) => log.debug({ err }, 'offset commit failed'),
  );
  const timer = setInterval(() => void (o.broadcast || commit()), o.commitIntervalMs ?? 500);
  timer.unref();

  const joined = firstJoin(consumer, log);
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const assigned = payload.memberAssignment as Record<string, number[]>;
    for (const [id, st] of run.partitions) if (!assigned[st.topic]?.includes(st.partition)) run.partitions.delete(id);
  });
  const reader = o.broadcast ? trackBroadcast(ctx, run, consumer, log) : null;

  await consumer.connect();
  for (const t of o.topics) {
    const fromBeginning = o.broadcast ? false : (o.fromBeginning ?? true);
    await ctx.atStart(`subscribing to ${ctx.name(t)}`, () => consumer.subscribe({ topic: ctx.name(t), fromBeginning }));
  }
  const config: ConsumerRunConfig = {
    autoCommit: false,
    eachBatchAutoResolve: false,
    // A partition waiting for free slots must not hold up the others.
    partitionsConsumedConcurrently: 16,
    eachBatch: async (payload) => {
      const st = stateOf(run, payload.batch.topic, payload.batch.partition);
      await (run.handleBatch ? handleFetchedBatch(run, st, payload) : dispatchFetched(run, st, payload));
    },
  };
  const stopRestarts = await runKept(consumer, config, log);

  // Ready (and the service says "consuming") once the group gave this instance its partitions.
  await joined;
  const handle: KeyedConsumer = {
    divertsNow: (key) => run.dispatch.divertsNow(key),
    async close() {
      if (run.closing) return;
      run.closing = true;
      stopRestarts();
      consumer.pause(o.topics.map((t) => ({ topic: ctx.name(t) })));
      await Promise.allSettled([...run.inflight]);
      clearInterval(timer);
      run.dispatch.close();
      if (!o.broadcast) await commit();
      if (reader) ctx.broadcastReaders.get(o.groupId)?.delete(reader);
      await consumer.disconnect();
      stopAdapting();
    },
  };
  ctx.consumers.push(handle);
  return handle;
}
