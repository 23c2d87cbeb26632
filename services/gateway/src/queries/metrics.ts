/**
 * The tenant metrics API's queries (GET .../metrics/attempts and .../metrics/events): counts per
 * time bucket from the per-minute and per-hour count tables the attempts service keeps
 * (shared/src/db/migrations/010_operations.ts), split by the dimensions asked for.
 */
import type { Q } from './sql.ts';

export const BUCKETS = { minute: 60, hour: 3600, day: 86400 } as const;
export type Bucket = keyof typeof BUCKETS;
export const ATTEMPT_DIMENSIONS = ['topic', 'destination_id', 'status', 'code'] as const;
export type AttemptDimension = (typeof ATTEMPT_DIMENSIONS)[number];

/** Minute buckets are counted per tenant, topic, status and code: not by destination. */
export const minuteByDestination = (q: { bucket: Bucket; filters: Record<string, unknown>; groupBy: string[] }) =>
  q.bucket === 'minute' && (q.groupBy.includes('destination_id') || Boolean(q.filters.destination_id));

export interface CountQuery<D extends string> {
  /** null: every tenant (admin). */
  tenantIds: string[] | null;
  start: Date;
  end: Date;
  bucket: Bucket;
  /** Only rows whose dimension is one of these values. */
  filters: Partial<Record<D, string[]>>;
  groupBy: D[];
}

export interface CountPoint {
  time: string;
  count: number;
  /** Per second over the bucket. */
  rate: number;
  [dimension: string]: string | number;
}

/** Attempts per time bucket (from the per-minute counts), by the dimensions asked for. */
export function attemptCounts(q: Q, query: CountQuery<AttemptDimension>): Promise<CountPoint[]> {
  // Minute buckets come from the per-minute counts, which have no destination (minuteByDestination).
  return query.bucket === 'minute' ? counts(q, 'attempt_counts_minute', 'minute', query) : counts(q, 'attempt_counts_hour', 'hour', query);
}

/** Events received per time bucket, optionally by topic. */
export function eventCounts(q: Q, query: CountQuery<'topic'>): Promise<CountPoint[]> {
  return counts(q, 'event_counts', 'minute', query);
}

async function counts({ db }: Q, table: string, column: 'minute' | 'hour', q: CountQuery<string>): Promise<CountPoint[]> {
  // Dimensions are column names from a fixed list (the route validates them), never caller text.
  const dims = q.groupBy;
  const query = db(table)
    .select(db.raw(`date_trunc(?, ${column}, ?) AS bucket`, [q.bucket, 'UTC']), ...dims, db.raw('sum(count)::bigint AS count'))
    .where(column, '>=', q.start)
    .where(column, '<', q.end)
    .groupByRaw(['1', ...dims.map((_, i) => String(i + 2))].join(', '))
    .orderByRaw(['1', ...dims.map((_, i) => String(i + 2))].join(', '));
  if (q.tenantIds) query.whereIn('tenant_id', q.tenantIds);
  for (const [dim, values] of Object.entries(q.filters)) if (values?.length) query.whereIn(dim, values);
  const rows = (await query) as Array<Record<string, unknown> & { bucket: Date; count: number }>;
  const seconds = BUCKETS[q.bucket];
  return rows.map((r) => {
    const point: CountPoint = { time: r.bucket.toISOString(), count: r.count, rate: r.count / seconds };
    for (const d of dims) point[d] = r[d] as string;
    return point;
  });
}
