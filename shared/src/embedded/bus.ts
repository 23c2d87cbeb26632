/**
 * The embedded log: the `Bus` interface on local files, for the single-process embedded mode.
 *
 * Layout under `dir` (one process only: a lock file refuses a second one):
 *   <topic>/meta.json                 {"partitions": N}, fixed when the topic is created
 *   <topic>/<partition>/<base>.log    append-only segments; <base> is the offset of the first record
 *   __consumer_offsets.log            committed offsets of every group, appended, compacted at open
 *
 * A record is framed as u32 body length, u32 CRC-32 of the body, body; the body is f64 timestamp,
 * u32 key length, key, u32 headers length, headers (JSON), i32 value length (-1: null), value.
 * Offsets are implicit: the base of the segment plus the record's index in it.
 *
 * Guarantees, the same ones the services rely on from Kafka:
 * - `send` resolves only after the records are written and fdatasync'd; consumers see a record
 *   only from then on (the high watermark), so nothing a consumer saw can vanish in a crash.
 * - partition = CRC-32(key) % partitions, so one key's records stay in order.
 * - a group's committed offset is written and fdatasync'd before the commit completes; offsets are
 *   committed only below the lowest unfinished record (OffsetTracker), so after a crash the records
 *   from the committed offset on are delivered again (at least once).
 *
 * Limits: one consumer per group (no rebalancing: the process owns every partition); segments roll
 * at `segmentBytes` and whole closed segments older than `retentionMs` are deleted (time retention,
 * like Kafka's; a group further behind restarts at the oldest record left); an offset index is kept
 * in memory (one number per record of the retained log).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Logger } from '../log.ts';
import { coalesceBatches } from '../bus/coalesce.ts';
import {
  createCommitter,
  DELAYED_RELEASE_SLICE,
  keyedDispatchOf,
  MERGED_BATCH_MAX_RECORDS,
  releaseSlackMs,
  releaseSlice,
} from '../bus/consume.ts';
import type {
  Bus,
  BusConsumer,
  BusProducer,
  ConsumeOptions,
  DelayedConsumeOptions,
  InRecord,
  KeyedConsumer,
  LagRow,
} from '../bus/index.ts';
import { OffsetTracker, retryInPlace } from '../bus/inflight.ts';
import { allTopics, type TopicDef, topicName } from '../bus/topics.ts';
import { encode, type StoredRecord, toInRecord } from './codec.ts';
import { lockDirectory, syncDir, writeFileDurably } from './lock.ts';
import { OffsetStore } from './offsets.ts';
import { MAX_FETCH_RECORDS, Partition } from './partition.ts';

export interface EmbeddedBusOptions {
  /** Directory of the log (created when missing). */
  dir: string;
  topicPrefix: string;
  /** Partitions of topics created from now on (existing topics keep theirs). */
  partitions: number;
  log: Logger;
  /** A segment is closed and a new one started past this size (default 64 MiB). */
  segmentBytes?: number;
  /** Closed segments whose last write is older than this are deleted (default 7 days). */
  retentionMs?: number;
}

// ---------------------------------------------------------------------------------------------

/** How the embedded consumers retry our own faults: logged, with waits cut short by closing. */
const retryFor = (log: Logger, signal: AbortSignal, where: Record<string, unknown>) => ({
  stopped: () => signal.aborted,
  wait: (ms: number) => sleep(ms, signal),
  failed: (err: unknown, attempt: number) => log.error({ err, ...where, attempt }, 'handler failed; will retry'),
});

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });

/** Opens (creating when missing) the embedded log under `opts.dir`. */
export async function createEmbeddedBus(opts: EmbeddedBusOptions): Promise<Bus> {
  const lock = lockDirectory(opts.dir);
  const segmentBytes = opts.segmentBytes ?? 64 << 20;
  const retentionMs = opts.retentionMs ?? 7 * 86_400_000;
  const name = (t: TopicDef) => topicName(opts.topicPrefix, t);
  const topics = new Map<string, Partition[]>();
  const offsets = new OffsetStore(opts.dir);
  const groups = new Set<string>();
  const consumers: BusConsumer[] = [];
  // Broadcast readers by group (as the services name it): they commit nothing, so their lag is
  // where each one is in its partitions, kept here.
  const broadcastReaders = new Map<string, Set<(p: Partition) => number | undefined>>();
  let closed = false;
  try {
    await offsets.open();
  } catch (err) {
    lock.release();
    throw err;
  }

  const topicDir = (full: string) => join(opts.dir, encodeURIComponent(full));

  async function openTopic(full: string, create: boolean): Promise<Partition[]> {
    const known = topics.get(full);
    if (known) return known;
    const dir = topicDir(full);
    const metaPath = join(dir, 'meta.json');
    let count: number;
    if (existsSync(metaPath)) {
      count = (JSON.parse(readFileSync(metaPath, 'utf8')) as { partitions: number }).partitions;
    } else if (create) {
      mkdirSync(dir, { recursive: true });
      count = opts.partitions;
      await writeFileDurably(metaPath, JSON.stringify({ partitions: count }));
      await syncDir(opts.dir);
    } else {
      throw new Error(`embedded log: unknown topic ${full} (topics are created by ensureTopics)`);
    }
    const parts: Partition[] = [];
    for (let p = 0; p < count; p++) {
      const part = new Partition(full, p, join(dir, String(p)), segmentBytes, opts.log);
      await part.open();
      parts.push(part);
    }
    topics.set(full, parts);
    return parts;
  }

  const expire = async () => {
    for (const parts of topics.values()) for (const p of parts) await p.expire(Date.now() - retentionMs);
  };
  const retention = setInterval(() => {
    expire().catch((err: unknown) => opts.log.warn({ err }, 'embedded log: retention failed'));
  }, 3_600_000);
  retention.unref();

  const claimGroup = (groupId: string) => {
    if (closed) throw new Error('embedded log is closed');
    if (groups.has(groupId)) throw new Error(`embedded log: group ${groupId} already has a consumer (one per group in embedded mode)`);
    groups.add(groupId);
  };

  /** Where a partition's reading starts: the committed offset, else the oldest (or newest) record. */
  const startOf = (groupId: string, p: Partition, fromBeginning: boolean) => {
    const c = offsets.get(groupId, p.topic, p.id);
    if (c === undefined) return fromBeginning ? p.start() : p.end();
    return Math.max(c, p.start());
  };

  return {
    async ensureTopics(list = allTopics()) {
      for (const t of list) await openTopic(name(t), true);
      await expire();
    },

    async producer() {
      const handle: BusProducer = {
        async sendMany(batches) {
          // One group commit (one fdatasync) covers the concurrent appends.
          await Promise.all(batches.map((b) => handle.send(b.topic, b.records)));
        },
        async send(topic, records) {
          if (records.length === 0) return;
          if (closed) throw new Error('embedded log is closed');
          const parts = await openTopic(name(topic), false);
          const now = Date.now();
          const byPartition = new Map<Partition, Buffer[]>();
          for (const r of records) {
            const part = parts[crc32(r.key ?? '') % parts.length] as Partition;
            const list = byPartition.get(part) ?? [];
            list.push(encode(r, now));
            byPartition.set(part, list);
          }
          await Promise.all([...byPartition].map(([part, frames]) => part.append(frames)));
        },
        async close() {},
      };
      return handle;
    },

    async consume<T>(o: ConsumeOptions<T>) {
      // A broadcast reader starts at the end and commits nothing.
      const baseGroup = o.groupId;
      if (o.broadcast) o = { ...o, groupId: `${o.groupId}.${randomUUID()}` };
      claimGroup(o.groupId);
      const log = opts.log.child({ group: o.groupId });
      const parts = (await Promise.all(o.topics.map((t) => openTopic(name(t), false)))).flat();
      const abort = new AbortController();
      const inflight = new Set<Promise<void>>();
      const states = parts.map((p) => ({
        p,
        tracker: new OffsetTracker(),
        committed: null as string | null,
        waiters: [] as Array<() => void>,
      }));

      const commit = createCommitter(
        () => states,
        (due) =>
          offsets.commit(
            o.groupId,
            due.map(({ st, offset }) => ({ topic: st.p.topic, partition: st.p.id, offset: Number(offset) })),
          ),
        (err) => log.error({ err }, 'embedded log: offset commit failed'),
      );
      const timer = o.handleBatch || o.broadcast ? null : setInterval(() => void commit(), o.commitIntervalMs ?? 500);
      timer?.unref();

      // Our own faults are retried in place until they pass, as with Kafka.
      const retrying = (what: () => Promise<void>, where: Record<string, unknown>) =>
        retryInPlace(what, retryFor(log, abort.signal, where));

      const dispatch = keyedDispatchOf(o, {
        untilDone: (what, record) => retrying(what, { topic: record.topic, partition: record.partition, offset: record.offset }),
      });

      type State = (typeof states)[number];
      const startAt = (st: State) => (o.broadcast ? st.p.end() : startOf(o.groupId, st.p, o.fromBeginning ?? true));
      // Where each partition is read from now; after a record, the offset past the last one handled.
      const from = new Map(states.map((st) => [st, startAt(st)]));
      const handledTo = new Map<State, number>();
      const reader = (p: Partition) => {
        const st = states.find((x) => x.p === p);
        if (!st) return undefined;
        const done = st.tracker.committable();
        return Math.max(from.get(st) as number, handledTo.get(st) ?? 0, done === null ? 0 : Number(done));
      };
      if (o.broadcast) {
        const set = broadcastReaders.get(baseGroup) ?? new Set();
        set.add(reader);
        broadcastReaders.set(baseGroup, set);
      }

      // A batch consumer reads every partition in one loop and hands what they hold to one handler
      // call, as the Kafka bus merges a fetch's partitions: one transaction and one offset commit (one
      // fdatasync) a round, where a loop per partition made one each for every partition with a record
      // (docs/performance.md, "Embedded batch consumers: one call for every partition").
      const runBatches = async (handleBatch: NonNullable<typeof o.handleBatch>) => {
        if (!states.length) return; // nothing to wait for (a race of no waits would never end)
        const pos = new Map(states.map((st) => [st, from.get(st) as number]));
        const at = (st: State) => Math.max(pos.get(st) as number, st.p.start());
        const backlog = () => states.reduce((n, st) => n + st.p.backlog(at(st)), 0);
        const perPartition = Math.max(1, Math.min(MAX_FETCH_RECORDS, Math.floor(MERGED_BATCH_MAX_RECORDS / states.length)));
        // A merged call that fails is handled again partition by partition, so one partition's
        // failure is retried alone (coalesce.ts); the calls below are made in one turn, so they merge.
        const merged = coalesceBatches(handleBatch, MERGED_BATCH_MAX_RECORDS, (err, batches, records) =>
          log.warn({ err, batches, records }, 'merged batch failed; handling its batches one by one'),
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
              retrying(() => merged(records), { topic: st.p.topic, partition: st.p.id, offset: records[0]?.offset }),
            ),
          );
          const done = batches.filter((_, i) => handled[i]);
          for (const { st, records } of done) {
            pos.set(st, Number((records.at(-1) as InRecord<T>).offset) + 1);
            handledTo.set(st, pos.get(st) as number);
          }
          if (!o.broadcast && done.length)
            await offsets.commit(
              o.groupId,
              done.map(({ st }) => ({ topic: st.p.topic, partition: st.p.id, offset: pos.get(st) as number })),
            );
          if (done.length < batches.length) break; // closing: what was not handled is read again at the next start
        }
      };

      const run = async (st: State) => {
        const { p } = st;
        let pos = from.get(st) as number;
        while (!abort.signal.aborted) {
          await p.waitFor(pos, abort.signal);
          if (abort.signal.aborted) break;
          pos = Math.max(pos, p.start());
          for (const r of await p.read(pos)) {
            while (!dispatch.hasRoom(st) && !abort.signal.aborted) await dispatch.roomFreed(st);
            if (abort.signal.aborted) break;
            pos = r.offset + 1;
            await dispatch.run(toInRecord<T>(p.topic, p.id, r, o.keepRaw), st, inflight, r.value?.length ?? 0);
          }
        }
      };
      const loops = o.handleBatch
        ? [runBatches(o.handleBatch.bind(o)).catch((err: unknown) => log.error({ err }, 'embedded log: consumer loop failed'))]
        : states.map((st) =>
            run(st).catch((err: unknown) => {
              log.error({ err, topic: st.p.topic, partition: st.p.id }, 'embedded log: consumer loop failed');
            }),
          );

      let closing: Promise<void> | null = null;
      const handle: KeyedConsumer = {
        divertsNow: (key) => dispatch.divertsNow(key),
        close() {
          closing ??= (async () => {
            abort.abort();
            for (const st of states) for (const w of st.waiters.splice(0)) w();
            await Promise.allSettled(loops);
            await Promise.allSettled([...inflight]);
            if (timer) clearInterval(timer);
            dispatch.close();
            if (!o.broadcast) await commit();
            broadcastReaders.get(baseGroup)?.delete(reader);
            groups.delete(o.groupId);
          })();
          return closing;
        },
      };
      consumers.push(handle);
      return handle;
    },

    async consumeDelayed<T>(o: DelayedConsumeOptions<T>) {
      claimGroup(o.groupId);
      const log = opts.log.child({ group: o.groupId });
      const abort = new AbortController();
      const loops: Promise<void>[] = [];
      for (const t of o.topics) {
        const delay = o.delayMs(t);
        for (const p of await openTopic(name(t), false)) {
          loops.push(
            (async () => {
              let pos = startOf(o.groupId, p, true);
              // Logged with a failure: the offset of the failed record (the commit stops before it).
              const where = {
                topic: p.topic,
                partition: p.id,
                get offset() {
                  return String(pos);
                },
              };
              // Released from `pos` on: after a failure, again from the failed record (as Kafka fetches
              // again from it), with backoff.
              const release = (due: StoredRecord[]) =>
                releaseSlice(
                  due.filter((r) => r.offset >= pos),
                  (r) => o.handle(toInRecord<T>(p.topic, p.id, r)),
                  async (last) => {
                    await offsets.commit(o.groupId, [{ topic: p.topic, partition: p.id, offset: last.offset + 1 }]);
                    pos = last.offset + 1;
                  },
                );
              while (!abort.signal.aborted) {
                await p.waitFor(pos, abort.signal);
                if (abort.signal.aborted) return;
                pos = Math.max(pos, p.start());
                // Each topic has one delay, so a partition is in due order: the due records lead.
                const records = await p.read(pos, DELAYED_RELEASE_SLICE);
                const now = Date.now();
                const firstLater = records.findIndex((r) => r.timestamp + delay > now);
                const due = firstLater < 0 ? records : records.slice(0, firstLater);
                if (due.length && !(await retryInPlace(() => release(due), retryFor(log, abort.signal, where)))) return;
                const next = firstLater < 0 ? undefined : records[firstLater];
                if (!next) continue;
                // Not due: wait for it (and those due soon after: releaseSlackMs, as with Kafka), then
                // read again from it. A loop, since timers may fire a millisecond early by the wall clock.
                const resumeAt = next.timestamp + delay + releaseSlackMs(delay);
                for (let wait = resumeAt - Date.now(); wait > 0 && !abort.signal.aborted; wait = resumeAt - Date.now()) {
                  await sleep(wait, abort.signal);
                }
              }
            })().catch((err: unknown) => log.error({ err, topic: p.topic, partition: p.id }, 'embedded log: delayed consumer loop failed')),
          );
        }
      }
      let closing: Promise<void> | null = null;
      const handle: BusConsumer = {
        close() {
          closing ??= (async () => {
            abort.abort();
            await Promise.allSettled(loops);
            groups.delete(o.groupId);
          })();
          return closing;
        },
      };
      consumers.push(handle);
      return handle;
    },

    async lag(groups) {
      const rows: LagRow[] = [];
      for (const { groupId, topics: defs } of groups) {
        const readers = broadcastReaders.get(groupId);
        for (const def of defs) {
          for (const p of topics.get(name(def)) ?? []) {
            let lag = 0;
            if (readers?.size) {
              // A broadcast group: the reader furthest behind, from where it is (it commits nothing).
              for (const at of readers) lag = Math.max(lag, p.end() - (at(p) ?? p.end()));
            } else lag = Math.max(0, p.end() - startOf(groupId, p, true));
            rows.push({ groupId, topic: def.name, partition: p.id, lag });
          }
        }
      }
      return rows;
    },

    async ping() {
      if (closed) throw new Error('embedded log is closed');
    },

    async close() {
      if (closed) return;
      // Consumers first: in-flight work still writes its results while finishing.
      await Promise.allSettled(consumers.splice(0).map((c) => c.close()));
      closed = true;
      clearInterval(retention);
      for (const parts of topics.values()) for (const p of parts) await p.close();
      await offsets.close();
      lock.release();
    },
  };
}
