/**
 * The admission bound (PUBLISH_MAX_BACKLOG): publishing is refused with 429 RATE_LIMITED and
 * Retry-After while the delivery backlog is over the bound, so that overload shows at the producer
 * at once instead of as publish-to-delivery latency that grows without a signal.
 *
 * The backlog is what was accepted and not yet delivered: the router group's lag on the events topic
 * plus, for each type a sender runs for, its sender group's lag on its deliveries topic, summed over
 * partitions (the same figures as `switchyard_consumer_lag_records`). Which types run is sender
 * presence in the database (the rule of the NO_SENDER reason, pending-reason.ts), so it is the same
 * on Kafka and on the embedded log, and a sender restarting within 90 s still counts. A type no
 * sender runs is left out: its deliveries wait for one by design, and its group, never committed,
 * would count every record its topic retains, so one tenant's destination of that type would refuse
 * every tenant's publishes. Waiting retries are not counted: they wait by design. The
 * router commits an event after writing its deliveries, so for that moment it counts in both lags:
 * the figure can exceed what is pending by up to a router batch. It is read once a second in the
 * background; a publish only compares the last figure with the bound, so the check costs nothing
 * per request. Retry-After is that second: the soonest the answer can change.
 *
 * Fails open: while the lag cannot be read (the log or the database away, the read slower than its limit) the last
 * figure stands for at most `staleAfterMs`, then publishing is admitted and the write itself fails
 * or succeeds as it would without the bound.
 */
import type { FastifyInstance } from 'fastify';
import type { LagRow } from '@switchyard/shared/bus/index.ts';
import { AppError } from '@switchyard/shared/errors.ts';
import { GROUP, TOPIC, type TopicDef } from '@switchyard/shared/bus/topics.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import { metrics, withTimeout } from '@switchyard/shared/metrics.ts';
import { DESTINATION_TYPES } from '@switchyard/shared/model/index.ts';

/** The consumer groups whose lag is the delivery backlog: the router's and the sender group of each type in `running`. */
function backlogGroups(running: ReadonlySet<string>): Array<{ groupId: string; topics: TopicDef[] }> {
  return [
    { groupId: GROUP.router, topics: [TOPIC.events] },
    ...DESTINATION_TYPES.filter((type) => running.has(type)).map((type) => ({
      groupId: GROUP.sender(type),
      topics: [TOPIC.deliveries[type]],
    })),
  ];
}

export type ReadLag = (groups: Array<{ groupId: string; topics: TopicDef[] }>) => Promise<LagRow[]>;

export interface Admission {
  /** The refusal to answer a publish with now, or null to admit it. */
  refusal(): AppError | null;
  /** The backlog last read (records), or null when none was read yet or it is stale. */
  backlog(): number | null;
  /** Seconds a refused publish is told to wait (Retry-After). */
  readonly retryAfterSeconds: number;
  close(): void;
}

export function startAdmission(opts: {
  maxBacklog: number;
  readLag: ReadLag;
  /** The destination types a sender runs for now (pending-reason.ts `createSenderPresence`). */
  senderTypes: () => Promise<ReadonlySet<string>>;
  log: Logger;
  /** How often the backlog is read (default 1 s). */
  intervalMs?: number;
  /** A figure older than this is not used (default 10 s). */
  staleAfterMs?: number;
}): Admission {
  const intervalMs = opts.intervalMs ?? 1_000;
  const staleAfterMs = opts.staleAfterMs ?? 10_000;
  let last: { records: number; at: number } | null = null;
  let warned = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  async function read(): Promise<void> {
    try {
      const lagOfRunning = async () => opts.readLag(backlogGroups(await opts.senderTypes()));
      const rows = await withTimeout(lagOfRunning(), Math.max(intervalMs, 3_000));
      const records = rows.reduce((sum, r) => sum + r.lag, 0);
      last = { records, at: Date.now() };
      metrics.publishBacklog.set(records);
      warned = false;
    } catch (err) {
      // Once per outage: the metrics scrape and readiness report the log being away.
      if (!warned) opts.log.warn({ err }, 'reading the delivery backlog failed; publishing is admitted while it cannot be read');
      warned = true;
    }
  }
  const loop = async () => {
    await read();
    if (!stopped) timer = setTimeout(loop, intervalMs);
  };
  void loop();

  const current = () => (last && Date.now() - last.at <= staleAfterMs ? last.records : null);
  const retryAfterSeconds = Math.max(1, Math.ceil(intervalMs / 1000));
  return {
    retryAfterSeconds,
    backlog: current,
    refusal() {
      const records = current();
      if (records === null || records <= opts.maxBacklog) return null;
      return new AppError(
        'RATE_LIMITED',
        `The delivery backlog (${records} records) is over PUBLISH_MAX_BACKLOG (${opts.maxBacklog}); nothing was published. Retry after ${retryAfterSeconds} s.`,
      );
    },
    close() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** The publish routes, refused before their bodies are read while the backlog is over the bound. */
const PUBLISH_URLS = new Set(['/api/v1/publish', '/api/v1/publish/batch']);

/** Registers the bound on the publish routes (after authentication: a stranger learns nothing of the load). */
export function registerAdmission(app: FastifyInstance, admission: Admission): void {
  app.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'POST' || !PUBLISH_URLS.has(req.routeOptions.url ?? '')) return;
    const refusal = admission.refusal();
    if (!refusal) return;
    metrics.eventsPublished.inc({ outcome: 'refused' });
    void reply.header('retry-after', String(admission.retryAfterSeconds));
    throw refusal;
  });
  app.addHook('onClose', async () => admission.close());
}
