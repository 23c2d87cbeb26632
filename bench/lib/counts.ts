// What a phase stored and wrote, read after (or while) it runs: attempts stored (Postgres's count,
// or embedded mode's metrics), successful attempts per topic and their figures for destination types
// whose peer cannot tell the runner what it received, and the records written to each Kafka topic.
// The runner's queries carry RUNNER_TAG so --pg-statements leaves them out.
import kafkajs from 'kafkajs';
import type pg from 'pg';
import { sumMetric } from './efficiency.ts';
import { RUNNER_TAG } from './pg-statements.ts';
import type { ReceiverStats } from './receiver-process.ts';
import { EMPTY_SUMMARY, summarize } from './stats.ts';

/** Rows in the `attempts` table. */
export async function storedAttempts(db: pg.Client): Promise<number> {
  const r = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM attempts ${RUNNER_TAG}`);
  return Number(r.rows[0]?.n ?? 0);
}

/** Successful attempts stored for events of `topic` (the probe's or the load's). */
export async function succeededAttempts(db: pg.Client, topic: string): Promise<number> {
  const r = await db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM attempts WHERE status = 'success' AND topic = $1 ${RUNNER_TAG}`,
    [topic],
  );
  return Number(r.rows[0]?.n ?? 0);
}

/**
 * Embedded mode's stored attempts: the records its attempts service has written, from the
 * process's metrics (`switchyard_records_consumed_total` of the `attempts` group counts a batch once
 * it is stored). Null when the process serves no metrics (a `--services-root` tree older than them):
 * its stored attempts are not counted, and the phase goes by deliveries alone.
 */
export async function attemptsConsumed(gatewayUrl: string): Promise<number | null> {
  const res = await fetch(`${gatewayUrl}/metrics`);
  const text = await res.text();
  if (res.status === 404) return null;
  return sumMetric(text, 'switchyard_records_consumed_total', { group: 'attempts' });
}

/** Records written to each topic of a deployment (sum over partitions of high - low watermark). */
export async function topicRecords(brokers: string, prefix: string): Promise<Record<string, number>> {
  const admin = new kafkajs.Kafka({
    clientId: 'switchyard-bench-admin',
    brokers: brokers.split(','),
    logLevel: kafkajs.logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const out: Record<string, number> = {};
    for (const topic of (await admin.listTopics()).filter((t) => t.startsWith(prefix)).sort()) {
      const n = (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
      if (n > 0) out[topic.slice(prefix.length)] = n;
    }
    return out;
  } finally {
    await admin.disconnect();
  }
}

/**
 * What the receiver reports for webhook destinations, read from the attempts instead, for types whose
 * peer cannot tell the runner what it received: successful attempts of the load's events between
 * `from` and `to` (epoch ms), publish→delivered as the attempt's stored time minus the event's
 * `sent_at`, repeats of one event on one destination as duplicates, and the deliveries per second.
 */
export async function attemptFigures(db: pg.Client, from: number, to: number): Promise<ReceiverStats> {
  const q = await db.query<{ at: number; ms: number; dup: boolean }>(
    `SELECT extract(epoch FROM a.time)::float8 * 1000 AS at,
            extract(epoch FROM a.time)::float8 * 1000 - (e.data->>'sent_at')::float8 AS ms,
            row_number() OVER (PARTITION BY a.event_id, a.destination_id ORDER BY a.time) > 1 AS dup
       FROM attempts a JOIN events e ON e.tenant_id = a.tenant_id AND e.id = a.event_id
      WHERE a.status = 'success' AND a.topic = 'bench.event' ${RUNNER_TAG}`,
  );
  const inWindow: number[] = [];
  const perSec: Record<string, number> = {};
  let dups = 0;
  for (const r of q.rows) {
    const at = Number(r.at);
    if (r.dup) dups++;
    if (at >= from && at < to) {
      inWindow.push(Number(r.ms));
      const sec = String(Math.floor(at / 1000));
      perSec[sec] = (perSec[sec] ?? 0) + 1;
    }
  }
  const zero = { ok: 0, hang: 0, ceiling: 0 };
  return {
    now: Date.now(),
    received: { ...zero, ok: q.rows.length },
    inWindow: { ...zero, ok: inWindow.length },
    hungNow: 0,
    duplicates: { ...zero, ok: dups },
    verify: { checked: 0, ok: 0, failed: 0, noSecret: 0, unsigned: 0, errors: [] },
    latency: { ok: summarize(inWindow), hang: { ...EMPTY_SUMMARY }, ceiling: { ...EMPTY_SUMMARY } },
    series: { ok: perSec, hang: {}, ceiling: {} },
  };
}

/** Attempt rows by status and event rows of a phase's database (the stack's; embedded mode's are inside its process). */
export async function storedRows(db: pg.Client | null): Promise<{ attemptsByStatus: Record<string, number>; events: number }> {
  const byStatus = await db?.query<{ status: string; n: string }>('SELECT status, count(*)::text AS n FROM attempts GROUP BY status');
  const events = await db?.query<{ n: string }>('SELECT count(*)::text AS n FROM events');
  return {
    attemptsByStatus: Object.fromEntries((byStatus?.rows ?? []).map((r) => [r.status, Number(r.n)])),
    events: Number(events?.rows[0]?.n ?? 0),
  };
}
