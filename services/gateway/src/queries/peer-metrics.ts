/**
 * The metrics API in the other service's query form (GET .../metrics/attempts and .../metrics/events
 * with measures, time[start], time[end], granularity, dimensions, filters[...]; routes/metrics-peer.ts
 * parses it). Computed from the rows, not from the count tables (metrics.ts), which keep neither the
 * attempt number, the manual flag nor the destination type. The semantics are that service's (its
 * logstore: the Postgres store's SQL, the rate and bucket-filling helpers):
 * - attempts from `attempts` by attempt time (its partition key), with the destination's type from
 *   `destinations` ('' once the destination is deleted); events from `events` by event time, an
 *   event's destinations being those the router sent it to (`matched_destination_ids`);
 * - measures: successful/failed = status success/failed (a canceled attempt is failed, code ERR,
 *   as the listings show it); first_attempt = attempt_number 1 and not
 *   manual; retry = attempt_number > 1; manual_retry = manual; error_rate = failed / all; rates per
 *   second of the bucket (of the whole range without a granularity);
 * - buckets by date_bin from fixed origins (2000-01-01 for s, m, h; 1970-01-01 for days; Sunday
 *   1970-01-04 for weeks; calendar months, 1970-based for several), and with a granularity every
 *   bucket of the range is present for each dimension combination found, zero where nothing was;
 * - at most ROW_LIMIT grouped rows (then `truncated`), each statement at most `timeoutMs`.
 * A query that exceeds what may be computed throws MetricsTooBroad; the route answers it as a 4xx.
 */
import type { Knex } from '@switchyard/shared/db/index.ts';
import type { V } from './sql.ts';
import { storedStatuses } from './views.ts';

export const ROW_LIMIT = 100_000;
/** Most time buckets one query may span (as the other service: more would not fit in memory). */
export const MAX_BUCKETS = 100_000;
/** Most points an answer may hold once empty buckets are filled (dimension combinations x buckets). */
export const MAX_POINTS = 500_000;
export const QUERY_TIMEOUT_MS = 30_000;

export const EVENT_MEASURES = ['count', 'rate'] as const;
export const EVENT_DIMENSIONS = ['tenant_id', 'topic', 'destination_id'] as const;
export const ATTEMPT_MEASURES = [
  'count',
  'successful_count',
  'failed_count',
  'error_rate',
  'first_attempt_count',
  'retry_count',
  'manual_retry_count',
  'avg_attempt_number',
  'rate',
  'successful_rate',
  'failed_rate',
] as const;
export const ATTEMPT_DIMENSIONS = [
  'tenant_id',
  'destination_id',
  'destination_type',
  'topic',
  'status',
  'code',
  'manual',
  'attempt_number',
] as const;

export type Unit = 's' | 'm' | 'h' | 'd' | 'w' | 'M';
export interface Granularity {
  value: number;
  unit: Unit;
}

export interface PeerQuery {
  /** The range, [start, end): as the caller wrote it (microseconds kept), and in ms for the buckets. */
  start: string;
  end: string;
  startMs: number;
  endMs: number;
  granularity?: Granularity;
  measures: string[];
  dimensions: string[];
  /** Values per filter; `tenant_id` absent: every tenant. destination_type in interface.md's names. */
  filters: Record<string, string[]>;
}

export interface PeerPoint {
  time_bucket?: string;
  dimensions: Record<string, string>;
  metrics: Record<string, number>;
}

export interface PeerAnswer {
  data: PeerPoint[];
  metadata: { granularity?: string; query_time_ms: number; row_count: number; row_limit: number; truncated: boolean };
}

/** The query asks more than may be computed: too many buckets or points, or the statement timed out. */
export class MetricsTooBroad extends Error {
  override name = 'MetricsTooBroad';
}

// ---------------------------------------------------------------------------------------------
// Time buckets: the same alignment in SQL (the grouping) and here (the filling).

const SECONDS: Record<Exclude<Unit, 'M'>, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };
const ORIGIN: Record<Exclude<Unit, 'M'>, string> = {
  s: '2000-01-01T00:00:00Z',
  m: '2000-01-01T00:00:00Z',
  h: '2000-01-01T00:00:00Z',
  d: '1970-01-01T00:00:00Z',
  w: '1970-01-04T00:00:00Z',
};

/** The bucket of `col` as SQL; only numbers from a parsed granularity go into the text. */
function bucketSql(col: string, g: Granularity): string {
  if (g.unit === 'M') {
    // date_bin takes no months: months since 1970, down to a multiple of the value, in UTC. Down, not
    // towards zero as integer division goes: a month before 1970 falls in the bucket that holds it.
    const months = `((extract(year FROM ${col} AT TIME ZONE 'UTC')::int - 1970) * 12 + extract(month FROM ${col} AT TIME ZONE 'UTC')::int - 1)`;
    return `((timestamp '1970-01-01' + floor(${months}::numeric / ${g.value})::int * ${g.value} * interval '1 month') AT TIME ZONE 'UTC')`;
  }
  return `date_bin('${g.value * SECONDS[g.unit]} seconds'::interval, ${col}, '${ORIGIN[g.unit]}'::timestamptz)`;
}

/** The first of month `month` (0-11, or past them) of `year`, UTC; Date.UTC would read years 0-99 as 1900-1999. */
function monthStart(year: number, month: number): number {
  const d = new Date(0);
  return d.setUTCFullYear(year, month, 1);
}

function truncate(ms: number, g: Granularity): number {
  if (g.unit === 'M') {
    const d = new Date(ms);
    // Down, as the SQL goes (bucketSql).
    const months = Math.floor(((d.getUTCFullYear() - 1970) * 12 + d.getUTCMonth()) / g.value) * g.value;
    return monthStart(1970, months);
  }
  const step = g.value * SECONDS[g.unit] * 1000;
  const origin = Date.parse(ORIGIN[g.unit]);
  return ms - ((((ms - origin) % step) + step) % step);
}

function advance(ms: number, g: Granularity): number {
  if (g.unit !== 'M') return ms + g.value * SECONDS[g.unit] * 1000;
  const d = new Date(ms);
  return monthStart(d.getUTCFullYear(), d.getUTCMonth() + g.value);
}

/** The buckets of [start, end), from the one holding start; null past MAX_BUCKETS. */
export function bucketsOf(startMs: number, endMs: number, g: Granularity): number[] | null {
  const out: number[] = [];
  for (let t = truncate(startMs, g); t < endMs; t = advance(t, g)) {
    if (out.length >= MAX_BUCKETS) return null;
    out.push(t);
  }
  return out;
}

/** Seconds a rate is per: the bucket's (a month bucket's own length), or the range's. */
function bucketSeconds(bucketMs: number | undefined, q: PeerQuery): number {
  const g = q.granularity;
  if (!g) return (q.endMs - q.startMs) / 1000;
  if (g.unit !== 'M') return g.value * SECONDS[g.unit];
  const monthStart = truncate(bucketMs ?? q.startMs, { value: 1, unit: 'M' });
  return (advance(monthStart, g) - monthStart) / 1000;
}

// ---------------------------------------------------------------------------------------------
// The statements.

const RATES: Record<string, string> = { rate: 'count', successful_rate: 'successful_count', failed_rate: 'failed_count' };

// A canceled attempt is shown as the attempt listings show it (views.ts): failed, code ERR.
const SHOWN_STATUS = "CASE a.status WHEN 'canceled' THEN 'failed' ELSE a.status END";
const SHOWN_CODE = "CASE a.status WHEN 'canceled' THEN 'ERR' ELSE a.code END";

const ATTEMPT_MEASURE_SQL: Record<string, string> = {
  count: 'count(*)::float8',
  successful_count: "(count(*) FILTER (WHERE a.status = 'success'))::float8",
  failed_count: "(count(*) FILTER (WHERE a.status <> 'success'))::float8",
  error_rate: "(count(*) FILTER (WHERE a.status <> 'success'))::float8 / count(*)",
  first_attempt_count: '(count(*) FILTER (WHERE a.attempt_number = 1 AND NOT a.manual))::float8',
  retry_count: '(count(*) FILTER (WHERE a.attempt_number > 1))::float8',
  manual_retry_count: '(count(*) FILTER (WHERE a.manual))::float8',
  avg_attempt_number: 'avg(a.attempt_number)::float8',
};
const ATTEMPT_DIMENSION_SQL: Record<string, string> = {
  tenant_id: 'a.tenant_id',
  destination_id: 'a.destination_id',
  destination_type: "coalesce(d.type, '')",
  topic: 'a.topic',
  status: SHOWN_STATUS,
  code: SHOWN_CODE,
  manual: 'a.manual',
  attempt_number: 'a.attempt_number',
};
const ATTEMPT_FILTER_SQL: Record<string, string> = {
  tenant_id: 'a.tenant_id = ANY(?::text[])',
  destination_id: 'a.destination_id = ANY(?::text[])',
  destination_type: "coalesce(d.type, '') = ANY(?::text[])",
  topic: 'a.topic = ANY(?::text[])',
  status: 'a.status = ANY(?::text[])',
  code: `${SHOWN_CODE} = ANY(?::text[])`,
  manual: 'a.manual = ANY(?::boolean[])',
  attempt_number: 'a.attempt_number = ANY(?::integer[])',
};

interface Statement {
  sql: string;
  values: V[];
  /** The SQL measures computed, in select order after the bucket and dimensions. */
  computed: string[];
}

/** SELECT bucket, dimensions, measures ... GROUP BY all but the measures, ordered by them. */
function grouped(
  q: PeerQuery,
  source: { from: string; time: string; dimensions: Record<string, string>; measures: Record<string, string> },
  conds: string[],
  values: V[],
): Statement {
  // A rate needs its count; the answer still holds only the measures asked for.
  const computed = [...new Set(q.measures.map((m) => RATES[m] ?? m))];
  const keys = [
    ...(q.granularity ? [bucketSql(source.time, q.granularity)] : []),
    ...q.dimensions.map((d) => source.dimensions[d] as string),
  ];
  const { from, measures } = source;
  const select = [...keys.map((k, i) => `${k} AS k${i}`), ...computed.map((m, i) => `${measures[m]} AS m${i}`)];
  const positions = keys.map((_, i) => String(i + 1)).join(', ');
  const sql = [
    `SELECT ${select.join(', ')} FROM ${from} WHERE ${conds.join(' AND ')}`,
    keys.length ? `GROUP BY ${positions}` : '',
    // An aggregate over no rows is still a row: none is wanted.
    'HAVING count(*) > 0',
    keys.length ? `ORDER BY ${positions}` : '',
    `LIMIT ${ROW_LIMIT + 1}`,
  ].join(' ');
  return { sql, values, computed };
}

function attemptStatement(q: PeerQuery): Statement {
  const conds = ['a.time >= ?::timestamptz', 'a.time < ?::timestamptz'];
  const values: V[] = [q.start, q.end];
  for (const [name, list] of Object.entries(q.filters)) {
    conds.push(ATTEMPT_FILTER_SQL[name] as string);
    values.push(name === 'status' ? storedStatuses(list) : list);
  }
  // The type only when asked for: one primary-key probe per attempt row.
  const typed = q.dimensions.includes('destination_type') || 'destination_type' in q.filters;
  const from = typed ? 'attempts a LEFT JOIN destinations d ON d.tenant_id = a.tenant_id AND d.id = a.destination_id' : 'attempts a';
  return grouped(q, { from, time: 'a.time', dimensions: ATTEMPT_DIMENSION_SQL, measures: ATTEMPT_MEASURE_SQL }, conds, values);
}

function eventStatement(q: PeerQuery): Statement {
  const conds = ['e.time >= ?::timestamptz', 'e.time < ?::timestamptz'];
  const values: V[] = [q.start, q.end];
  const byDestination = q.dimensions.includes('destination_id');
  for (const [name, list] of Object.entries(q.filters)) {
    if (name === 'tenant_id') conds.push('e.tenant_id = ANY(?::text[])');
    else if (name === 'topic') conds.push('e.topic = ANY(?::text[])');
    // Split by destination, a filter keeps only the destinations named (not every destination of
    // an event that has one of them); otherwise an event counts once if it went to any of them.
    else if (byDestination) conds.push('u.destination_id = ANY(?::text[])');
    else conds.push('e.matched_destination_ids && ?::text[]');
    values.push(list);
  }
  const from = byDestination ? 'events e CROSS JOIN LATERAL unnest(e.matched_destination_ids) AS u(destination_id)' : 'events e';
  const dimensions = { tenant_id: 'e.tenant_id', topic: 'e.topic', destination_id: 'u.destination_id' };
  return grouped(q, { from, time: 'e.time', dimensions, measures: { count: 'count(*)::float8' } }, conds, values);
}

/** Runs a statement within the timeout; a cancelled statement is MetricsTooBroad. */
async function runBounded(db: Knex, st: Statement, timeoutMs: number): Promise<Record<string, unknown>[]> {
  try {
    return await db.transaction(async (tx) => {
      // SET LOCAL: the bound ends with this transaction, never reaching the pool's other users.
      await tx.raw(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
      return ((await tx.raw(st.sql, st.values)) as { rows: Record<string, unknown>[] }).rows;
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === '57014') throw new MetricsTooBroad(`the query ran past ${timeoutMs} ms`, { cause: err });
    throw err;
  }
}

/** A bucket's start as the other service writes it: whole seconds, no fraction. */
const bucketText = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');

/** Dimension values are text in the answer: manual "true"/"false", attempt_number "2". */
const dimensionText = (v: unknown): string => String(v ?? '');

/** The rows as points: bucket, dimensions (text), the measures asked for. */
function pointsOf(rows: Record<string, unknown>[], q: PeerQuery, computed: string[]): Array<{ at?: number; point: PeerPoint }> {
  const offset = q.granularity ? 1 : 0;
  return rows.map((r) => {
    const dimensions: Record<string, string> = {};
    q.dimensions.forEach((d, i) => {
      dimensions[d] = dimensionText(r[`k${i + offset}`]);
    });
    const metrics: Record<string, number> = {};
    computed.forEach((m, i) => {
      metrics[m] = Number(r[`m${i}`] ?? 0);
    });
    if (!q.granularity) return { point: { dimensions, metrics } };
    const at = new Date(r.k0 as Date | string).getTime();
    return { at, point: { time_bucket: bucketText(at), dimensions, metrics } };
  });
}

/** Every bucket of the range, per dimension combination found (sorted by their values), zero where nothing was. */
function filled(found: Array<{ at?: number; point: PeerPoint }>, q: PeerQuery, computed: string[]): PeerPoint[] {
  const g = q.granularity;
  if (!g) return found.map((f) => f.point);
  const buckets = bucketsOf(q.startMs, q.endMs, g);
  if (!buckets) throw new MetricsTooBroad(`the range holds more than ${MAX_BUCKETS} buckets`);
  const key = (p: PeerPoint) => q.dimensions.map((d) => p.dimensions[d]).join('\u0000');
  const combos = new Map<string, Record<string, string>>();
  const at = new Map<string, PeerPoint>();
  for (const f of found) {
    const k = key(f.point);
    if (!combos.has(k)) combos.set(k, f.point.dimensions);
    at.set(`${k}\u0001${f.at}`, f.point);
  }
  // Without dimensions there is one combination, found or not: the whole range comes back in zeros.
  if (!q.dimensions.length && !combos.size) combos.set('', {});
  if (combos.size * buckets.length > MAX_POINTS)
    throw new MetricsTooBroad(`${combos.size} combinations of dimensions x ${buckets.length} buckets is more than ${MAX_POINTS} points`);
  const zero = Object.fromEntries(computed.map((m) => [m, 0]));
  const out: PeerPoint[] = [];
  for (const k of [...combos.keys()].sort()) {
    const dimensions = combos.get(k) as Record<string, string>;
    for (const b of buckets)
      out.push(at.get(`${k}\u0001${b}`) ?? { time_bucket: bucketText(b), dimensions: { ...dimensions }, metrics: { ...zero } });
  }
  return out;
}

/** The answer: rates from their counts, only the measures asked for, and the metadata. */
function answer(points: PeerPoint[], q: PeerQuery, truncated: boolean, startedAt: number): PeerAnswer {
  const data = points.map((p) => {
    const metrics: Record<string, number> = {};
    for (const m of q.measures) {
      const count = RATES[m];
      const t = p.time_bucket ? Date.parse(p.time_bucket) : undefined;
      metrics[m] = count ? (p.metrics[count] ?? 0) / bucketSeconds(t, q) : (p.metrics[m] ?? 0);
    }
    return { ...p, metrics };
  });
  const g = q.granularity;
  return {
    data,
    metadata: {
      ...(g ? { granularity: `${g.value}${g.unit}` } : {}),
      query_time_ms: Math.round(performance.now() - startedAt),
      row_count: data.length,
      row_limit: ROW_LIMIT,
      truncated,
    },
  };
}

async function query(db: Knex, st: Statement, q: PeerQuery, timeoutMs: number): Promise<PeerAnswer> {
  const startedAt = performance.now();
  const rows = await runBounded(db, st, timeoutMs);
  const truncated = rows.length > ROW_LIMIT;
  const found = pointsOf(truncated ? rows.slice(0, ROW_LIMIT) : rows, q, st.computed);
  return answer(filled(found, q, st.computed), q, truncated, startedAt);
}

export function peerAttemptMetrics(db: Knex, q: PeerQuery, timeoutMs = QUERY_TIMEOUT_MS): Promise<PeerAnswer> {
  return query(db, attemptStatement(q), q, timeoutMs);
}

export function peerEventMetrics(db: Knex, q: PeerQuery, timeoutMs = QUERY_TIMEOUT_MS): Promise<PeerAnswer> {
  return query(db, eventStatement(q), q, timeoutMs);
}
