/**
 * The embedded log: the `Bus` interface on local files, for the single-process embedded mode.
 *
 * Its modules: lock.ts (one process per directory), codec.ts (record framing), partition.ts
 * (segments, appends, reads), offsets.ts (committed offsets), context.ts (what they share: topics,
 * groups, offsets), producer.ts, consumer.ts, delayed.ts (the retry tiers) and this one, which opens
 * the log and composes them.
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
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Bus, LagRow } from '../bus/index.ts';
import { ConfigError } from '../config/index.ts';
import { allTopics, type TopicDef } from '../bus/topics.ts';
import { consume } from './consumer.ts';
import { createContext, type EmbeddedBusOptions, type EmbeddedContext } from './context.ts';
import { consumeDelayed } from './delayed.ts';
import { lockDirectory } from './lock.ts';
import { OffsetStore } from './offsets.ts';
import { createProducer } from './producer.ts';

export type { EmbeddedBusOptions } from './context.ts';

/** Consumer lag per partition: the log's end minus the group's committed offset, or a broadcast reader's place. */
function lag(ctx: EmbeddedContext, groups: Array<{ groupId: string; topics: TopicDef[] }>): LagRow[] {
  const rows: LagRow[] = [];
  for (const { groupId, topics: defs } of groups) {
    const readers = ctx.broadcastReaders.get(groupId);
    for (const def of defs) {
      for (const p of ctx.topics.get(ctx.name(def)) ?? []) {
        let lag = 0;
        if (readers?.size) {
          // A broadcast group: the reader furthest behind, from where it is (it commits nothing).
          for (const at of readers) lag = Math.max(lag, p.end() - (at(p) ?? p.end()));
        } else lag = Math.max(0, p.end() - ctx.startOf(groupId, p, true));
        rows.push({ groupId, topic: def.name, partition: p.id, lag });
      }
    }
  }
  return rows;
}

const PREFIX_FILE = 'topic-prefix';

/**
 * The topic prefix a log was made with, kept beside it: started with another, the process would
 * make a second set of topics in the same directory and leave the records waiting in the first,
 * accepted and never delivered, without a word. So another prefix is refused (a bad setting).
 */
function checkPrefix(dir: string, prefix: string): void {
  const file = join(dir, PREFIX_FILE);
  if (!existsSync(file)) {
    writeFileSync(file, prefix);
    return;
  }
  const kept = readFileSync(file, 'utf8');
  if (kept !== prefix)
    throw new ConfigError([
      `KAFKA_TOPIC_PREFIX: the log in ${dir} was made with "${kept}", whose topics hold what it accepted; start with that prefix (or another DATA_DIR)`,
    ]);
}

/** Opens (creating when missing) the embedded log under `opts.dir`. */
export async function createEmbeddedBus(opts: EmbeddedBusOptions): Promise<Bus> {
  const lock = lockDirectory(opts.dir);
  const retentionMs = opts.retentionMs ?? 7 * 86_400_000;
  const offsets = new OffsetStore(opts.dir);
  try {
    checkPrefix(opts.dir, opts.topicPrefix);
    await offsets.open();
  } catch (err) {
    lock.release();
    throw err;
  }
  const ctx = createContext(opts, offsets);

  const expire = async () => {
    for (const parts of ctx.topics.values())
      for (const p of parts) await p.expire(Date.now() - retentionMs, ctx.offsets.floor(p.topic, p.id));
  };
  const retention = setInterval(() => {
    expire().catch((err: unknown) => opts.log.warn({ err }, 'embedded log: retention failed'));
  }, 3_600_000);
  retention.unref();

  return {
    async ensureTopics(list = allTopics()) {
      for (const t of list) await ctx.openTopic(ctx.name(t), true);
      await expire();
    },
    producer: async () => createProducer(ctx),
    consume: (o) => consume(ctx, o),
    consumeDelayed: (o) => consumeDelayed(ctx, o),
    lag: async (groups) => lag(ctx, groups),
    async ping() {
      if (ctx.closed) throw new Error('embedded log is closed');
    },
    async close() {
      if (ctx.closed) return;
      // Consumers first: in-flight work still writes its results while finishing.
      await Promise.allSettled(ctx.consumers.splice(0).map((c) => c.close()));
      ctx.closed = true;
      clearInterval(retention);
      for (const parts of ctx.topics.values()) for (const p of parts) await p.close();
      await offsets.close();
      lock.release();
    },
  };
}
