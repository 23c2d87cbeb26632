// The embedded log's consumer (Bus.consume): a loop per partition handing records one at a time to
// the keyed dispatch, or one loop over every partition handing what they hold to one handleBatch
// call. One consumer per group: the process owns every partition.
import { randomUUID } from 'node:crypto';
import { coalesceBatches } from '../bus/coalesce.ts';
import { createCommitter, keyedDispatchOf, MERGED_BATCH_MAX_RECORDS } from '../bus/consume.ts';
import type { ConsumeOptions, InRecord, KeyedConsumer } from '../bus/index.ts';
import { retryInPlace } from '../bus/inflight.ts';
import { OffsetTracker } from '../bus/offset-tracker.ts';
import type { Logger } from '../log.ts';
import { toInRecord } from './codec.ts';
import { type EmbeddedContext, retryFor, sleep } from './context.ts';
import { MAX_FETCH_RECORDS, type Partition } from './partition.ts';

interface State {
  p: Partition;
  tracker: OffsetTracker;
  committed: string | null;
  waiters: Array<() => void>;
}

/** One consumer's running state: what its loops and its close work with. */
interface EmbeddedRun<T> {
  ctx: EmbeddedContext;
  o: ConsumeOptions<T>;
  log: Logger;
  states: State[];
  abort: AbortController;
  inflight: Set<Promise<void>>;
  dispatch: ReturnType<typeof keyedDispatchOf<T>>;
  /** Where each partition is read from now. */
  from: Map<State, number>;
  /** After a batch, the offset past the last record handled. */
  handledTo: Map<State, number>;
  /** Our own faults retried in place until they pass, as with Kafka. */
  retrying(what: () => Promise<void>, where: Record<string, unknown>): Promise<boolean>;
  /** A record consumer's record starts: its offset is to be committed once it is done. */
  recordStarted(): void;
}

/**
 * A batch consumer reads every partition in one loop and hands what they hold to one handler
 * call, as the Kafka bus merges a fetch's partitions: one transaction and one offset commit (one
 * fdatasync) a round, where a loop per partition made one each for every partition with a record
 * (docs/performance.md, "Embedded batch consumers: one call for every partition").
 */
async function runBatches<T>(run: EmbeddedRun<T>, handleBatch: NonNullable<ConsumeOptions<T>['handleBatch']>): Promise<void> {
  const { o, states, abort } = run;
  if (!states.length) return; // nothing to wait for (a race of no waits would never end)
  const pos = new Map(states.map((st) => [st, run.from.get(st) as number]));
  const at = (st: State) => Math.max(pos.get(st) as number, st.p.start());
  const backlog = () => states.reduce((n, st) => n + st.p.backlog(at(st)), 0);
  const perPartition = Math.max(1, Math.min(MAX_FETCH_RECORDS, Math.floor(MERGED_BATCH_MAX_RECORDS / states.length)));
  // A merged call that fails is handled again partition by partition, so one partition's
  // failure is retried alone (coalesce.ts); the calls below are made in one turn, so they merge.
  const merged = coalesceBatches(handleBatch, MERGED_BATCH_MAX_RECORDS, (err, batches, records) =>
    run.log.warn({ err, batches, records }, 'merged batch failed; handling its batches one by one'),
  );
  while (!abort.signal.aborted) {
    if (backlog() === 0) {
      // Woken by the first partition with a record; the others' waits end with the round.
      const round = new AbortController();
      const signal = AbortSignal.any([abort.signal, round.signal]);
      await Promise.race(states.map((st) => st.p.waitFor(at(st), signal)));
      round.abort();
    }
    if (abort.signal.aborted) break;
    // Kafka's fetch wait: a batch smaller than a full read may wait to fill.
    if (o.batchWaitMs && backlog() < MERGED_BATCH_MAX_RECORDS) await sleep(o.batchWaitMs, abort.signal);
    if (abort.signal.aborted) break;
    const reads = await Promise.all(
      states
        .filter((st) => st.p.backlog(at(st)) > 0)
        .map(async (st) => ({
          st,
          records: (await st.p.read(at(st), perPartition)).map((r) => toInRecord<T>(st.p.topic, st.p.id, r, o.keepRaw)),
        })),
    );
    const batches = reads.filter((r) => r.records.length);
    const handled = await Promise.all(
      batches.map(({ st, records }) =>
        run.retrying(() => merged(records), { topic: st.p.topic, partition: st.p.id, offset: records[0]?.offset }),
      ),
    );
    const done = batches.filter((_, i) => handled[i]);
    for (const { st, records } of done) {
      pos.set(st, Number((records.at(-1) as InRecord<T>).offset) + 1);
      run.handledTo.set(st, pos.get(st) as number);
    }
    if (!o.broadcast && done.length)
      await run.ctx.offsets.commit(
        o.groupId,
        done.map(({ st }) => ({ topic: st.p.topic, partition: st.p.id, offset: pos.get(st) as number })),
      );
    if (done.length < batches.length) break; // closing: what was not handled is read again at the next start
  }
}

/** One partition's records, one at a time through the keyed dispatch, each waiting for a free slot. */
async function runRecords<T>(run: EmbeddedRun<T>, st: State): Promise<void> {
  const { p } = st;
  const { abort, dispatch } = run;
  let pos = run.from.get(st) as number;
  while (!abort.signal.aborted) {
    await p.waitFor(pos, abort.signal);
    if (abort.signal.aborted) break;
    pos = Math.max(pos, p.start());
    for (const r of await p.read(pos)) {
      while (!dispatch.hasRoom(st) && !abort.signal.aborted) await dispatch.roomFreed(st);
      if (abort.signal.aborted) break;
      pos = r.offset + 1;
      await dispatch.run(toInRecord<T>(p.topic, p.id, r, run.o.keepRaw), st, run.inflight, r.value?.length ?? 0);
      run.recordStarted();
    }
  }
}

/** Where a broadcast reader is in `p` (for its lag): past its last handled record, at least where it started. */
function readerOf<T>(run: EmbeddedRun<T>): (p: Partition) => number | undefined {
  return (p) => {
    const st = run.states.find((x) => x.p === p);
    if (!st) return undefined;
    const done = st.tracker.committable();
    return Math.max(run.from.get(st) as number, run.handledTo.get(st) ?? 0, done === null ? 0 : Number(done));
  };
}

export async function consume<T>(ctx: EmbeddedContext, o: ConsumeOptions<T>): Promise<KeyedConsumer> {
  // A broadcast reader starts at the end and commits nothing.
  const baseGroup = o.groupId;
  if (o.broadcast) o = { ...o, groupId: `${o.groupId}.${randomUUID()}` };
  ctx.claimGroup(o.groupId);
  const log = ctx.opts.log.child({ group: o.groupId });
  const parts = (await Promise.all(o.topics.map((t) => ctx.openTopic(ctx.name(t), false)))).flat();
  const abort = new AbortController();
  const states: State[] = parts.map((p) => ({ p, tracker: new OffsetTracker(), committed: null, waiters: [] }));

  const commit = createCommitter(
    () => states,
    (due) =>
      ctx.offsets.commit(
        o.groupId,
        due.map(({ st, offset }) => ({ topic: st.p.topic, partition: st.p.id, offset: Number(offset) })),
      ),
    (err) => log.error({ err }, 'embedded log: offset commit failed'),
  );
  // Offsets of handled records are committed every commitIntervalMs while records are in flight;
  // the timer is armed as a record starts, so an idle consumer keeps none waking it.
  let timer: ReturnType<typeof setTimeout> | null = null;
  const armCommit =
    o.handleBatch || o.broadcast
      ? () => {}
      : () => {
          if (timer) return;
          timer = setTimeout(() => {
            timer = null;
            void commit();
            if (run.inflight.size) armCommit();
          }, o.commitIntervalMs ?? 500);
          timer.unref();
        };

  const retrying = (what: () => Promise<void>, where: Record<string, unknown>) => retryInPlace(what, retryFor(log, abort.signal, where));
  const startAt = (st: State) => (o.broadcast ? st.p.end() : ctx.startOf(o.groupId, st.p, o.fromBeginning ?? true));
  const run: EmbeddedRun<T> = {
    ctx,
    o,
    log,
    states,
    abort,
    inflight: new Set(),
    dispatch: keyedDispatchOf(o, {
      untilDone: (what, record) => retrying(what, { topic: record.topic, partition: record.partition, offset: record.offset }),
    }),
    from: new Map(states.map((st) => [st, startAt(st)])),
    handledTo: new Map(),
    retrying,
    recordStarted: armCommit,
  };
  const reader = readerOf(run);
  if (o.broadcast) {
    const set = ctx.broadcastReaders.get(baseGroup) ?? new Set();
    set.add(reader);
    ctx.broadcastReaders.set(baseGroup, set);
  }

  const loops = o.handleBatch
    ? [runBatches(run, o.handleBatch.bind(o)).catch((err: unknown) => log.error({ err }, 'embedded log: consumer loop failed'))]
    : states.map((st) =>
        runRecords(run, st).catch((err: unknown) => {
          log.error({ err, topic: st.p.topic, partition: st.p.id }, 'embedded log: consumer loop failed');
        }),
      );

  let closing: Promise<void> | null = null;
  const handle: KeyedConsumer = {
    divertsNow: (key) => run.dispatch.divertsNow(key),
    close() {
      closing ??= (async () => {
        abort.abort();
        for (const st of states) for (const w of st.waiters.splice(0)) w();
        await Promise.allSettled(loops);
        await Promise.allSettled([...run.inflight]);
        if (timer) clearTimeout(timer);
        run.dispatch.close();
        if (!o.broadcast) await commit();
        ctx.broadcastReaders.get(baseGroup)?.delete(reader);
        ctx.groups.delete(o.groupId);
      })();
      return closing;
    },
  };
  ctx.consumers.push(handle);
  return handle;
}
