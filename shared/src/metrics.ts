/**
 * Prometheus metrics of every service: one registry per process, every metric defined here (so the
 * dashboard test can check its queries against one list), instrumented by small hooks in the
 * services and by wrapping the Bus (`instrumentBus`, applied once in runtime.ts) so that both buses
 * count consumed, produced and dead-lettered records, batch sizes, records in flight and parked
 * deliveries without a line in the bus code.
 *
 * Names follow Prometheus conventions (`switchyard_` prefix, `_total` counters, `_seconds` units);
 * labels are bounded: route patterns, never URLs; destination types, statuses, codes and topic
 * names, never tenant or destination ids. In embedded mode every service shares the process's one
 * registry, served once by the gateway.
 */
import client from 'prom-client';
import type { Knex } from './db/index.ts';
import type {
  AfterKey,
  Bus,
  BusProducer,
  ConsumeOptions,
  KeyClock,
  DelayedConsumeOptions,
  InRecord,
  LagRow,
  OutRecord,
} from './bus/index.ts';
import { RETRY_TIERS_SECONDS, type TopicDef } from './bus/topics.ts';
import type { AttemptRecord } from './model/index.ts';

export const registry = new client.Registry();
// The event loop's delay is sampled every 100 ms, not prom-client's 10: its timer woke every process
// a hundred times a second, most of what an idle service spent (docs/performance.md, "A quiet
// pipeline"). A stall still shows in full; there are fewer samples of a busy loop's small delays.
client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });

const SECONDS_FAST = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SECONDS_SLOW = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200];

export const metrics = {
  httpRequests: new client.Counter({
    name: 'switchyard_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  }),
  httpDuration: new client.Histogram({
    name: 'switchyard_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: SECONDS_FAST,
    registers: [registry],
  }),
  eventsPublished: new client.Counter({
    name: 'switchyard_events_published_total',
    help: 'Events offered to the gateway by outcome: accepted (acknowledged by the log), duplicate (an id seen before), refused (the delivery backlog over PUBLISH_MAX_BACKLOG: 429), failed.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  publishBacklog: new client.Gauge({
    name: 'switchyard_publish_backlog_records',
    help: 'The delivery backlog the gateway last read for its admission bound (PUBLISH_MAX_BACKLOG): records the router and the senders of running types have not committed. 0 while the bound is off, and in the other services.',
    registers: [registry],
  }),
  deliveries: new client.Counter({
    name: 'switchyard_deliveries_total',
    help: "Delivery attempts by destination type, status (success, failed, canceled: nothing sent) and code ('OK', 'ERR', 'CANCELED' or the HTTP status).",
    labelNames: ['type', 'status', 'code'] as const,
    registers: [registry],
  }),
  deliveryLatency: new client.Histogram({
    name: 'switchyard_delivery_latency_seconds',
    help: "Time from an event's receipt (publish), or a scheduled event's deliver_at, to its first delivery attempt's answer, by destination type. Canceled attempts are not observed.",
    labelNames: ['type'] as const,
    buckets: SECONDS_SLOW,
    registers: [registry],
  }),
  deliveryDuration: new client.Histogram({
    name: 'switchyard_delivery_duration_seconds',
    help: 'Time a destination took to answer one attempt, by destination type. Canceled attempts (nothing sent) are not observed.',
    labelNames: ['type'] as const,
    buckets: SECONDS_FAST,
    registers: [registry],
  }),
  retriesScheduled: new client.Counter({
    name: 'switchyard_retries_scheduled_total',
    help: 'Automatic retries scheduled after a failed attempt, by the retry tier they wait in first (1s ... 7200s).',
    labelNames: ['tier'] as const,
    registers: [registry],
  }),
  retriesSuperseded: new client.Counter({
    name: 'switchyard_retries_superseded_total',
    help: 'Deliveries not made because they had succeeded since: automatic retries after a manual retry, and copies of a delivery this sender made already (after a crash). No request, no attempt. By destination type.',
    labelNames: ['type'] as const,
    registers: [registry],
  }),
  consumerLag: new client.Gauge({
    name: 'switchyard_consumer_lag_records',
    help: "Records of a partition not yet committed by a consumer group of this process (the log's end minus the committed offset).",
    labelNames: ['group', 'topic', 'partition'] as const,
    registers: [registry],
    async collect() {
      await collectLag(this);
    },
  }),
  recordsConsumed: new client.Counter({
    name: 'switchyard_records_consumed_total',
    help: 'Records handled by a consumer group (a batch counts its records), by group and topic.',
    labelNames: ['group', 'topic'] as const,
    registers: [registry],
  }),
  recordsProduced: new client.Counter({
    name: 'switchyard_records_produced_total',
    help: 'Records acknowledged by the log, by topic.',
    labelNames: ['topic'] as const,
    registers: [registry],
  }),
  batchRecords: new client.Histogram({
    name: 'switchyard_consumer_batch_records',
    help: 'Records per batch handed to a batch consumer, by group.',
    labelNames: ['group'] as const,
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
    registers: [registry],
  }),
  deadLettered: new client.Counter({
    name: 'switchyard_dead_lettered_records_total',
    help: 'Records written to a dead-letter topic (records that can never be handled), by dead-letter topic.',
    labelNames: ['topic'] as const,
    registers: [registry],
  }),
  inflight: new client.Gauge({
    name: 'switchyard_consumer_inflight_records',
    help: 'Records a consumer group of this process is handling now (for a sender: deliveries in flight).',
    labelNames: ['group'] as const,
    registers: [registry],
  }),
  parked: new client.Counter({
    name: 'switchyard_deliveries_parked_total',
    help: 'Deliveries parked in a retry tier because their destination was stalled (not attempts), by group.',
    labelNames: ['group'] as const,
    registers: [registry],
  }),
  rateLimited: new client.Counter({
    name: 'switchyard_rate_limited_deliveries_total',
    help: "Deliveries that had to wait for their destination's rate limit, by destination type and outcome: waited (in memory, then made) or parked (in a retry tier, not an attempt).",
    labelNames: ['type', 'outcome'] as const,
    registers: [registry],
  }),
  orderedRetries: new client.Counter({
    name: 'switchyard_ordered_retries_total',
    help: "Failed tries of an ordered destination's delivery that are retried by its sender, by destination type: each one blocks the destination's later deliveries until its retry.",
    labelNames: ['type'] as const,
    registers: [registry],
  }),
  orderedSpill: new client.Counter({
    name: 'switchyard_ordered_spilled_deliveries_total',
    help: "Deliveries of ordered destinations that wait off their delivery partition (behind a blocked delivery, or for a rate-limit turn more than 0.5 s away), by destination type and stage: spilled (written to the destination's spill in Postgres) or drained (made from the spill, then removed). Spilled minus drained is what waits in spills.",
    labelNames: ['type', 'stage'] as const,
    registers: [registry],
  }),
  scheduledDeliveries: new client.Counter({
    name: 'switchyard_scheduled_deliveries_total',
    help: 'Deliveries of scheduled events (deliver_at), by destination type and stage: waiting (written to the retry tiers by the router) or due (reached a sender for its first attempt). Over a window, the increase of waiting minus that of due is how much the scheduled backlog grew.',
    labelNames: ['type', 'stage'] as const,
    registers: [registry],
  }),
  scheduledEvents: new client.Gauge({
    name: 'switchyard_scheduled_events',
    help: 'Scheduled events (deliver_at) not yet due and not canceled: the scheduled backlog, read from the database at each scrape by the attempts service (0 in other services: take max).',
    registers: [registry],
    async collect() {
      if (!scheduledBacklog) {
        this.reset();
        return;
      }
      try {
        this.set(await withTimeout(scheduledBacklog(), LAG_TIMEOUT_MS));
      } catch {
        // The last count stays rather than a wrong one (the database is away; /readyz says so).
      }
    },
  }),
  parkedDestinations: new client.Gauge({
    name: 'switchyard_parked_destinations',
    help: 'Destinations whose deliveries this process parked in the last 60 seconds, by group.',
    labelNames: ['group'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const since = Date.now() - PARKED_WINDOW_MS;
      for (const [group, keys] of parkedKeys) {
        for (const [key, at] of keys) if (at < since) keys.delete(key);
        this.set({ group }, keys.size);
      }
    },
  }),
  dbPool: new client.Gauge({
    name: 'switchyard_db_pool_connections',
    help: 'Database pool connections by state: used, free, and pending (acquires waiting for a connection).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const totals = { used: 0, free: 0, pending: 0 };
      for (const db of pools) {
        const pool = (db.client as { pool?: TarnPool }).pool;
        if (!pool) continue;
        totals.used += pool.numUsed();
        totals.free += pool.numFree();
        totals.pending += pool.numPendingAcquires();
      }
      for (const [state, n] of Object.entries(totals)) this.set({ state }, n);
    },
  }),
  operatorEvents: new client.Counter({
    name: 'switchyard_operator_events_total',
    help: 'Operator events raised (alert.consecutive_failure, destination.auto_disabled), by type.',
    labelNames: ['type'] as const,
    registers: [registry],
  }),
};

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

const PARKED_WINDOW_MS = 60_000;
/** Counts the scheduled backlog for `switchyard_scheduled_events`; set by the attempts service only. */
let scheduledBacklog: (() => Promise<number>) | null = null;

/** The attempts service's count of scheduled events still ahead (`switchyard_scheduled_events`). */
export function watchScheduledBacklog(count: (() => Promise<number>) | null): void {
  scheduledBacklog = count;
}
/** Per group: destination key -> when one of its deliveries was last parked (pruned at each scrape). */
const parkedKeys = new Map<string, Map<string, number>>();
const pools = new Set<Knex>();
const lagSources = new Set<{ bus: Bus; groups: Map<string, TopicDef[]> }>();

/** How long a scrape waits for consumer lag (Kafka unreachable must not hang /metrics). */
const LAG_TIMEOUT_MS = 3_000;

async function collectLag(gauge: client.Gauge<'group' | 'topic' | 'partition'>): Promise<void> {
  const rows: LagRow[] = [];
  await Promise.all(
    [...lagSources].map(async (src) => {
      if (!src.bus.lag || src.groups.size === 0) return;
      const query = [...src.groups].map(([groupId, topics]) => ({ groupId, topics }));
      const got = await withTimeout(src.bus.lag(query), LAG_TIMEOUT_MS).catch(() => null);
      if (got) rows.push(...got);
    }),
  );
  gauge.reset();
  for (const r of rows) gauge.set({ group: r.groupId, topic: r.topic, partition: String(r.partition) }, r.lag);
}

export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The pool gauge reads this database's pool until `untrackDb`. */
export function trackDb(db: Knex): void {
  pools.add(db);
}
export function untrackDb(db: Knex): void {
  pools.delete(db);
}

/** The Prometheus text exposition of the process's registry. */
export async function exposition(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/**
 * Counts one attempt: its outcome, the destination's answer time and, for a first attempt, publish ->
 * answer. A canceled attempt sent nothing: counted, with no time observed (its near-zero duration
 * would read as the destination answering fast). A scheduled event's latency runs from when it was
 * due (`deliverAt`, its `deliver_at`), not from its publish: the wait its publisher asked for is not
 * latency, while lateness after it (the retry tiers' release, a sender behind) still shows.
 */
export function observeAttempt(a: AttemptRecord, deliverAt?: string): void {
  metrics.deliveries.inc({ type: a.destination_type, status: a.status, code: a.code });
  if (a.status === 'canceled') return;
  metrics.deliveryDuration.observe({ type: a.destination_type }, a.duration_ms / 1000);
  if (a.attempt_number === 1 && !a.manual) {
    const from = Math.max(Date.parse(a.event_received_at), deliverAt ? Date.parse(deliverAt) : 0);
    const ms = Date.parse(a.time) - from;
    if (ms >= 0) metrics.deliveryLatency.observe({ type: a.destination_type }, ms / 1000);
  }
}

/** Counts a scheduled retry, by the tier (an index into RETRY_TIERS_SECONDS) it waits in first. */
export function observeRetry(tier: number): void {
  metrics.retriesScheduled.inc({ tier: `${RETRY_TIERS_SECONDS[tier]}s` });
}

/** The publish function, counting each call by its outcome (accepted, duplicate, failed). */
export function countPublishes<A extends unknown[], R extends { duplicate?: boolean }>(publish: (...args: A) => Promise<R>) {
  return async (...args: A): Promise<R> => {
    try {
      const r = await publish(...args);
      metrics.eventsPublished.inc({ outcome: r.duplicate ? 'duplicate' : 'accepted' });
      return r;
    } catch (err) {
      metrics.eventsPublished.inc({ outcome: 'failed' });
      throw err;
    }
  };
}

/** Counts operator events once written. */
export function countOperatorEvents(events: Array<{ type: string }>): void {
  for (const e of events) metrics.operatorEvents.inc({ type: e.type });
}

/** Counts one answered HTTP request; `route` is the route pattern (or 'unmatched'). */
export function observeHttp(method: string, route: string | undefined, status: number, seconds: number): void {
  const labels = { method, route: route ?? 'unmatched', status: String(status) };
  metrics.httpRequests.inc(labels);
  metrics.httpDuration.observe(labels, seconds);
}

/** Topics whose records can never be handled: their writes count as dead-lettered. */
const isDeadLetter = (t: TopicDef) => t.name.endsWith('dead-letter');

function countProduced(batches: Array<{ topic: TopicDef; records: OutRecord[] }>): void {
  for (const { topic, records } of batches) {
    if (!records.length) continue;
    metrics.recordsProduced.inc({ topic: topic.name }, records.length);
    if (isDeadLetter(topic)) metrics.deadLettered.inc({ topic: topic.name }, records.length);
  }
}

function instrumentProducer(p: BusProducer): BusProducer {
  return {
    async send(topic, records) {
      await p.send(topic, records);
      countProduced([{ topic, records }]);
    },
    async sendMany(batches) {
      await p.sendMany(batches);
      countProduced(batches);
    },
    close: () => p.close(),
  };
}

function instrumentConsume<T>(o: ConsumeOptions<T>): ConsumeOptions<T> {
  const group = o.groupId;
  const consumed = (records: Array<InRecord<T>>) => {
    for (const [topic, n] of Map.groupBy(records, (r) => r.topic))
      metrics.recordsConsumed.inc({ group, topic: baseName(o.topics, topic) }, n.length);
  };
  const out: ConsumeOptions<T> = { ...o };
  if (o.handleBatch) {
    const handleBatch = o.handleBatch.bind(o);
    out.handleBatch = async (records) => {
      metrics.batchRecords.observe({ group }, records.length);
      await handleBatch(records);
      consumed(records);
    };
  }
  if (o.handle) {
    const handle = o.handle.bind(o) as (r: InRecord<T>, clock: KeyClock) => Promise<undefined | AfterKey>;
    out.handle = (async (record: InRecord<T>, clock: KeyClock) => {
      metrics.inflight.inc({ group });
      let after: undefined | AfterKey;
      try {
        after = await handle(record, clock);
      } catch (err) {
        metrics.inflight.dec({ group });
        throw err;
      }
      const done = () => {
        metrics.inflight.dec({ group });
        consumed([record]);
      };
      if (typeof after !== 'function') {
        done();
        return;
      }
      // The rest of the record's work (written after the key's slot is free) still counts as in flight.
      return async () => {
        try {
          await after();
        } finally {
          done();
        }
      };
    }) as ConsumeOptions<T>['handle'];
  }
  if (o.onKeyBacklog) {
    const divert = o.onKeyBacklog.bind(o);
    const keys = parkedKeys.get(group) ?? new Map<string, number>();
    parkedKeys.set(group, keys);
    out.onKeyBacklog = async (record, stalledMs) => {
      await divert(record, stalledMs);
      metrics.parked.inc({ group });
      keys.set(o.dispatchKey?.(record) ?? record.key, Date.now());
    };
  }
  return out;
}

/** The catalogue name of a full (prefixed) topic name, so labels do not carry the deployment prefix. */
function baseName(topics: TopicDef[], full: string): string {
  return topics.find((t) => full.endsWith(t.name))?.name ?? full;
}

/**
 * The bus with metrics: records produced and dead-lettered, records consumed, batch sizes, records in
 * flight and parked deliveries per group; and the lag of the groups consumed through it, read at
 * each scrape from the bus's own offsets (Kafka's committed offsets and log ends, or the embedded
 * log's).
 */
export function instrumentBus(bus: Bus): Bus {
  const src = { bus, groups: new Map<string, TopicDef[]>() };
  lagSources.add(src);
  const wrapped: Bus = {
    ensureTopics: (topics) => bus.ensureTopics(topics),
    producer: async () => instrumentProducer(await bus.producer()),
    consume(o) {
      src.groups.set(o.groupId, o.topics);
      return bus.consume(instrumentConsume(o));
    },
    consumeDelayed<T>(o: DelayedConsumeOptions<T>) {
      src.groups.set(o.groupId, o.topics);
      const handle = o.handle.bind(o);
      return bus.consumeDelayed<T>({
        ...o,
        async handle(record) {
          await handle(record);
          metrics.recordsConsumed.inc({ group: o.groupId, topic: baseName(o.topics, record.topic) });
        },
      });
    },
    async close() {
      lagSources.delete(src);
      await bus.close();
    },
  };
  if (bus.lag) wrapped.lag = bus.lag.bind(bus);
  if (bus.ping) wrapped.ping = bus.ping.bind(bus);
  return wrapped;
}
