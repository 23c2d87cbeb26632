// The Kafka bus's administration: topics created (and the limits of those made before checked) at
// start, consumer lag for metrics, and the readiness ping.
import kafkajs, { type Admin } from 'kafkajs';
import type { LagRow } from '../bus/index.ts';
import type { TopicDef } from '../bus/topics.ts';
import type { BroadcastReader, KafkaContext } from './client.ts';

const { ConfigResourceTypes } = kafkajs;

/** Topics would be created with more replicas than the cluster has brokers: a setting to fix, not to retry. */
export class ReplicationError extends Error {
  readonly retriable = false;
  constructor(wanted: number, brokers: number) {
    super(
      `KAFKA_REPLICATION_FACTOR is ${wanted} but the cluster has ${brokers} broker(s): start the other brokers, or for a ` +
        'single development broker set KAFKA_REPLICATION_FACTOR=1 and KAFKA_MIN_INSYNC_REPLICAS=1 (docs/operations.md, "Production topology")',
    );
    this.name = 'ReplicationError';
  }
}

/** Creates the topics that are missing and warns of those made before with lower limits (one attempt). */
export async function ensureTopicsOnce(ctx: KafkaContext, topics: TopicDef[]): Promise<void> {
  const admin = ctx.kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(ctx.name(t)));
    if (missing.length) await createTopics(ctx, admin, missing);
    // Topics made before (by an earlier version or by hand) keep their limit: say so at start,
    // rather than when the first large event is refused.
    const kept = topics.filter((t) => existing.has(ctx.name(t))).map(ctx.name);
    if (kept.length) await warnOfKeptLimits(ctx, admin, kept);
  } finally {
    await admin.disconnect();
  }
}

async function createTopics(ctx: KafkaContext, admin: Admin, missing: TopicDef[]): Promise<void> {
  const { opts } = ctx;
  // Kafka's own answer (INVALID_REPLICATION_FACTOR) names neither the brokers nor the setting.
  const { brokers } = await admin.describeCluster();
  if (brokers.length < opts.replicationFactor) throw new ReplicationError(opts.replicationFactor, brokers.length);
  await admin.createTopics({
    waitForLeaders: true,
    topics: missing.map((t) => ({
      topic: ctx.name(t),
      numPartitions: opts.partitions,
      replicationFactor: opts.replicationFactor,
      configEntries: [
        { name: 'max.message.bytes', value: String(ctx.maxMessageBytes) },
        ...(opts.minInsyncReplicas ? [{ name: 'min.insync.replicas', value: String(opts.minInsyncReplicas) }] : []),
        ...(t.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : []),
      ],
    })),
  });
}

async function warnOfKeptLimits(ctx: KafkaContext, admin: Admin, kept: string[]): Promise<void> {
  const { opts, maxMessageBytes } = ctx;
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: kept.map((topic) => ({
      type: ConfigResourceTypes.TOPIC,
      name: topic,
      configNames: ['max.message.bytes', 'min.insync.replicas'],
    })),
  });
  const configOf = (r: (typeof resources)[number], config: string) =>
    Number(r.configEntries.find((e) => e.configName === config)?.configValue);
  const small = resources.flatMap((r) => {
    const v = configOf(r, 'max.message.bytes');
    return v < maxMessageBytes ? [`${r.resourceName} (${v})`] : [];
  });
  if (small.length) {
    opts.log.warn(
      { topics: small, wanted: maxMessageBytes },
      'topics with max.message.bytes below KAFKA_MAX_MESSAGE_BYTES: events near 1 MiB will be refused until it is raised',
    );
  }
  const fewer = resources.flatMap((r) => {
    const v = configOf(r, 'min.insync.replicas');
    return opts.minInsyncReplicas && v < opts.minInsyncReplicas ? [`${r.resourceName} (${v})`] : [];
  });
  if (fewer.length) {
    opts.log.warn(
      { topics: fewer, wanted: opts.minInsyncReplicas },
      'topics with min.insync.replicas below KAFKA_MIN_INSYNC_REPLICAS: an accepted write may live on fewer brokers until it is raised',
    );
  }
}

/**
 * The next offset a broadcast reader is to handle: after its last handled record, at least where it
 * (re)started. A partition whose start is unknown (not read yet, or the log's end could not be read
 * as it joined) starts at `high`, the end seen now.
 */
function broadcastPosition(r: BroadcastReader, topic: string, partition: number, high: number): number {
  const id = `${topic}\u0000${partition}`;
  if (!r.from.has(id)) r.from.set(id, high);
  return Math.max(r.from.get(id) as number, r.handled(topic, partition) ?? 0);
}

type Ends = (topic: string) => Promise<Array<{ partition: number; high: string; low: string }>>;

/** Per partition, the reader furthest behind: the log's end minus where it is (the offset after its last handled record, or the end it started at). */
async function broadcastLag(ctx: KafkaContext, groupId: string, topics: TopicDef[], readers: Set<BroadcastReader>, endsOf: Ends) {
  const rows: LagRow[] = [];
  for (const def of topics) {
    for (const e of await endsOf(ctx.name(def))) {
      const high = Number(e.high);
      let lag = 0;
      for (const r of readers) lag = Math.max(lag, high - broadcastPosition(r, ctx.name(def), e.partition, high));
      rows.push({ groupId, topic: def.name, partition: e.partition, lag });
    }
  }
  return rows;
}

/** The log's end minus the group's committed offset (its start if none), per partition. */
async function committedLag(ctx: KafkaContext, a: Admin, groupId: string, topics: TopicDef[], endsOf: Ends) {
  const rows: LagRow[] = [];
  const committed = await a.fetchOffsets({ groupId: `${ctx.opts.topicPrefix}${groupId}`, topics: topics.map(ctx.name) });
  for (const t of committed) {
    const def = topics.find((d) => ctx.name(d) === t.topic);
    const end = await endsOf(t.topic);
    for (const p of t.partitions) {
      const e = end.find((x) => x.partition === p.partition);
      if (!e) continue;
      const from = Number(p.offset) >= 0 ? Number(p.offset) : Number(e.low);
      rows.push({ groupId, topic: def?.name ?? t.topic, partition: p.partition, lag: Math.max(0, Number(e.high) - from) });
    }
  }
  return rows;
}

export async function lag(ctx: KafkaContext, groups: Array<{ groupId: string; topics: TopicDef[] }>): Promise<LagRow[]> {
  const a = await ctx.adminOnce();
  // Every group and topic asked at once (a sender has a dozen groups): one round trip's wait,
  // not one per group, so a busy broker still answers within the scrape's bound.
  const ends = new Map<string, Promise<Array<{ partition: number; high: string; low: string }>>>();
  const endsOf = (topic: string) => {
    let end = ends.get(topic);
    if (!end) {
      end = a.fetchTopicOffsets(topic);
      ends.set(topic, end);
    }
    return end;
  };
  const perGroup = await Promise.all(
    groups.map(({ groupId, topics }): Promise<LagRow[]> => {
      const readers = ctx.broadcastReaders.get(groupId);
      return readers?.size ? broadcastLag(ctx, groupId, topics, readers, endsOf) : committedLag(ctx, a, groupId, topics, endsOf);
    }),
  );
  return perGroup.flat();
}
