// What the embedded log's modules share: its topics and their partitions, the committed offsets, the
// groups with a consumer, and the consumers to close. createEmbeddedBus (bus.ts) opens one per
// directory; producer.ts, consumer.ts and delayed.ts take it.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BusConsumer } from '../bus/index.ts';
import { type TopicDef, topicName } from '../bus/topics.ts';
import type { Logger } from '../log.ts';
import { syncDir, writeFileDurably } from './lock.ts';
import type { OffsetStore } from './offsets.ts';
import { Partition } from './partition.ts';

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

/** One open embedded log's shared state. */
export interface EmbeddedContext {
  opts: EmbeddedBusOptions;
  /** A catalogue topic's name with the deployment prefix. */
  name(t: TopicDef): string;
  /** Open topics by full name. */
  topics: Map<string, Partition[]>;
  offsets: OffsetStore;
  /** Groups with a consumer now (one per group). */
  groups: Set<string>;
  consumers: BusConsumer[];
  // Broadcast readers by group (as the services name it): they commit nothing, so their lag is
  // where each one is in its partitions, kept here.
  broadcastReaders: Map<string, Set<(p: Partition) => number | undefined>>;
  closed: boolean;
  /** A topic's partitions, opened once; created (with opts.partitions) only when `create`. */
  openTopic(full: string, create: boolean): Promise<Partition[]>;
  /** Registers a consumer of `groupId`, refused when the log is closed or the group has one. */
  claimGroup(groupId: string): void;
  /** Where a partition's reading starts: the committed offset, else the oldest (or newest) record. */
  startOf(groupId: string, p: Partition, fromBeginning: boolean): number;
}

export function createContext(opts: EmbeddedBusOptions, offsets: OffsetStore): EmbeddedContext {
  const segmentBytes = opts.segmentBytes ?? 64 << 20;
  const topics = new Map<string, Partition[]>();
  const topicDir = (full: string) => join(opts.dir, encodeURIComponent(full));
  const ctx: EmbeddedContext = {
    opts,
    name: (t) => topicName(opts.topicPrefix, t),
    topics,
    offsets,
    groups: new Set(),
    consumers: [],
    broadcastReaders: new Map(),
    closed: false,
    async openTopic(full, create) {
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
    },
    claimGroup(groupId) {
      if (ctx.closed) throw new Error('embedded log is closed');
      if (ctx.groups.has(groupId))
        throw new Error(`embedded log: group ${groupId} already has a consumer (one per group in embedded mode)`);
      ctx.groups.add(groupId);
    },
    startOf(groupId, p, fromBeginning) {
      const c = offsets.get(groupId, p.topic, p.id);
      if (c === undefined) return fromBeginning ? p.start() : p.end();
      return Math.max(c, p.start());
    },
  };
  return ctx;
}

/** How the embedded consumers retry our own faults: logged, with waits cut short by closing. */
export const retryFor = (log: Logger, signal: AbortSignal, where: Record<string, unknown>) => ({
  stopped: () => signal.aborted,
  wait: (ms: number) => sleep(ms, signal),
  failed: (err: unknown, attempt: number) => log.error({ err, ...where, attempt }, 'handler failed; will retry'),
});

/** Resolves after `ms`, or at once when `signal` aborts. */
export const sleep = (ms: number, signal: AbortSignal) =>
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
