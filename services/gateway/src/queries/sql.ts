/**
 * Building and running the listings' SQL: `?` placeholders (knex turns them into $n), conditions
 * that carry their own values, time windows, and the keyset page (shared/src/db/paging.ts holds
 * the cursors). Each listing is written so that Postgres reads one index range in order and stops
 * after limit + 1 rows: a listing over several tenants or destinations is a UNION ALL of one
 * ordered, limited branch per (tenant, destination), merged and cut again. docs/queries.md maps each
 * query to its index.
 */
import type { Knex } from '@switchyard/shared/db/index.ts';
import { type Dir, type Kind, type ListPage, type Page, type Pagination, pageOf, startOf } from '@switchyard/shared/db/paging.ts';
import type { Tenants, TimeRange } from './views.ts';

/** What every query runs with. */
export interface Q {
  db: Knex;
  /** Payload bytes a page of a listing that returns event data takes items up to (API_PAGE_MAX_BYTES). */
  pageMaxBytes: number;
}

/** Branches of a UNION beyond this many are folded into one IN (...) query instead. */
export const FANOUT_MAX = 50;

/**
 * How many items, of these payload sizes in page order, a page bounded to `maxBytes` takes: an item
 * while the bytes of the items before it are under the bound, so always the first.
 */
export function bytesCut(sizes: readonly number[], maxBytes: number): number {
  let bytes = 0;
  let n = 0;
  while (n < sizes.length && (n === 0 || bytes < maxBytes)) bytes += sizes[n++] as number;
  return n;
}

export type V = Knex.Value;
export type Cond = { sql: string; values: V[] };
export const cond = (sql: string, ...values: V[]): Cond => ({ sql, values });
/** col (a text column) is one of values: one array parameter, so the statement text does not depend on how many. */
export const inList = (col: string, values: readonly string[]): Cond =>
  values.length === 1 ? cond(`${col} = ?::text`, values[0] as V) : cond(`${col} = ANY(?::text[])`, [...values] as V);

export function timeConds(col: string, t: TimeRange | undefined): Cond[] {
  const out: Cond[] = [];
  if (t?.gte) out.push(cond(`${col} >= ?::timestamptz`, t.gte));
  if (t?.gt) out.push(cond(`${col} > ?::timestamptz`, t.gt));
  if (t?.lte) out.push(cond(`${col} <= ?::timestamptz`, t.lte));
  if (t?.lt) out.push(cond(`${col} < ?::timestamptz`, t.lt));
  return out;
}

export function where(conds: Cond[]): { sql: string; values: V[] } {
  return { sql: conds.length ? `WHERE ${conds.map((c) => c.sql).join(' AND ')}` : '', values: conds.flatMap((c) => c.values) };
}

/**
 * Runs a statement unnamed, so Postgres plans it with the actual values every time. (Named
 * statements would reuse a generic plan, which cannot see that one destination holds a third of
 * the rows and then picks the wrong index for it; the time windows keep planning cheap instead.)
 */
export async function run<R>(db: Knex, sql: string, values: V[]): Promise<R[]> {
  return ((await db.raw(sql, values)) as { rows: R[] }).rows;
}

/**
 * Time windows to read a page in, nearest first, as extra conditions on `col`. Reading newest
 * first from `from` (the cursor, else now): [day before, ...), [week before that, day before),
 * (..., week before that); oldest first, the mirror image, and one window when there is no
 * starting point. Windows entirely outside the caller's bounds are left out.
 */
function timeWindows(col: string, dir: Dir, from: number | undefined, bounds: TimeRange): Cond[][] {
  const DAY = 86_400_000;
  const lo = maxOf(bounds.gte, bounds.gt);
  const hi = minOf(bounds.lte, bounds.lt);
  const at = (ms: number) => new Date(ms).toISOString();
  if (dir === 'desc') {
    const start = Math.min(from ?? Date.now(), hi ?? Number.POSITIVE_INFINITY);
    const d0 = Math.floor(start / DAY) * DAY - DAY;
    const d1 = d0 - 7 * DAY;
    const ws: [number | undefined, number | undefined][] = [
      [d0, undefined],
      [d1, d0],
      [undefined, d1],
    ];
    return ws
      .filter(([, upper]) => upper === undefined || lo === undefined || upper > lo)
      .map(([lower, upper]) => [
        ...(lower === undefined ? [] : [cond(`${col} >= ?::timestamptz`, at(lower))]),
        ...(upper === undefined ? [] : [cond(`${col} < ?::timestamptz`, at(upper))]),
      ]);
  }
  const start = Math.max(from ?? Number.NEGATIVE_INFINITY, lo ?? Number.NEGATIVE_INFINITY);
  if (!Number.isFinite(start)) return [[]];
  const d0 = Math.ceil(start / DAY) * DAY + DAY;
  const d1 = d0 + 7 * DAY;
  const ws: [number | undefined, number | undefined][] = [
    [undefined, d0],
    [d0, d1],
    [d1, undefined],
  ];
  return ws
    .filter(([lower]) => lower === undefined || hi === undefined || lower < hi)
    .map(([lower, upper]) => [
      ...(lower === undefined ? [] : [cond(`${col} >= ?::timestamptz`, at(lower))]),
      ...(upper === undefined ? [] : [cond(`${col} < ?::timestamptz`, at(upper))]),
    ]);
}

const toMs = (s: string | undefined) => (s === undefined ? undefined : Date.parse(s.replace(' ', 'T')));
function maxOf(...xs: (string | undefined)[]): number | undefined {
  const v = xs.map(toMs).filter((x): x is number => x !== undefined && !Number.isNaN(x));
  return v.length ? Math.max(...v) : undefined;
}
function minOf(...xs: (string | undefined)[]): number | undefined {
  const v = xs.map(toMs).filter((x): x is number => x !== undefined && !Number.isNaN(x));
  return v.length ? Math.min(...v) : undefined;
}

export interface KeysetQuery {
  kind: Kind;
  /** Select list; must include the sort keys as k_time, k_id (and k_tenant when `tenant` is set). */
  select: string;
  from: string;
  /**
   * Several rows may share a key (deliveries of one event to several destinations): one row per
   * key. `select` then holds the keys and aggregates; `outer` is the select list merging branches.
   */
  group?: { by: string; outer: string };
  time: string;
  id: string;
  /** Tenant column when ids are only unique per tenant (events): the last tie-breaker. */
  tenant?: string;
  idType: 'uuid' | 'text';
  common: Cond[];
  /** One ordered, limited branch each; [[]] for a single query. */
  branches: Cond[][];
  /**
   * The sort column is also the partition key: read the page in time windows (the day before the
   * starting point, the week before that, then the rest) and stop once the page is full, so a
   * page usually plans and reads one or two days of partitions instead of all of them. `bounds`
   * are the caller's time filter, which skips windows outside it.
   */
  windows?: { bounds: TimeRange };
  /**
   * The rows carry payloads of `k_size` bytes (a column of `select`): the statement cuts the page
   * where the bytes of the rows before a row reach this bound (bytesCut's rule, as a running sum in
   * read order), so rows past the cut never leave the database. One statement only: not with `windows`.
   */
  maxBytes?: number;
}

export type KeyRow = { k_time: Date; k_id: string; k_tenant?: string; k_c: string; k_size?: number; k_before?: unknown; k_more?: boolean };

/**
 * Runs one page of a keyset listing in either direction. Walking backwards reads in the
 * opposite order and reverses the page. The cursor condition is a row comparison (an index
 * condition on the sort columns) plus a plain bound on the time column, which is what lets
 * Postgres skip whole partitions on deep pages.
 *
 * A page may end before `limit` rows: at the statement's byte bound (`q.maxBytes`), or where `cut`
 * says, which is handed the rows read (nearest the starting point first, at most limit) and returns
 * how many stay (at least one). The cursors are those of the rows that stay.
 */
export async function keysetPage<R extends KeyRow>(
  db: Knex,
  q: KeysetQuery,
  page: ListPage,
  cut?: (rows: R[]) => Promise<number>,
): Promise<{ rows: R[]; pagination: Pagination }> {
  if (q.maxBytes !== undefined && q.windows) throw new Error('keysetPage: a byte bound in the statement needs a single window');
  const start = startOf(page, q.kind);
  const { cursor, dir, readDir } = start;
  const op = readDir === 'desc' ? '<' : '>';
  const keyCols = q.tenant ? ['k_time', 'k_id', 'k_tenant'] : ['k_time', 'k_id'];
  const orderBy = `ORDER BY ${keyCols.map((c) => `${c} ${readDir}`).join(', ')}`;
  const n = page.limit + 1;

  const cursorConds: Cond[] = [];
  if (cursor) {
    cursorConds.push(
      q.tenant
        ? cond(`(${q.time}, ${q.id}, ${q.tenant}) ${op} (?::timestamptz, ?, ?)`, cursor.t, cursor.i, cursor.n ?? '')
        : cond(`(${q.time}, ${q.id}) ${op} (?::timestamptz, ?::${q.idType})`, cursor.t, cursor.i),
      cond(`${q.time} ${op}= ?::timestamptz`, cursor.t),
    );
  }
  const groupBy = q.group ? `GROUP BY ${q.group.by}` : '';
  const statement = (window: Cond[], limit: number) => {
    const branchSql = (extra: Cond[]) => {
      const w = where([...q.common, ...extra, ...cursorConds, ...window]);
      return { sql: `SELECT ${q.select} FROM ${q.from} ${w.sql} ${groupBy} ${orderBy} LIMIT ${limit}`, values: w.values };
    };
    if (q.branches.length <= 1) return branchSql(q.branches[0] ?? []);
    const parts = q.branches.map(branchSql);
    const outer = q.group ? `SELECT ${q.group.outer}` : 'SELECT *';
    const outerGroup = q.group ? `GROUP BY ${keyCols.join(', ')}` : '';
    return {
      sql: `${outer} FROM (${parts.map((p) => `(${p.sql})`).join(' UNION ALL ')}) u ${outerGroup} ${orderBy} LIMIT ${limit}`,
      values: parts.flatMap((p) => p.values),
    };
  };
  // The byte bound: k_before is the bytes of the rows ahead of a row in read order, k_more whether
  // the statement read a row after it (so a page cut here knows there is more).
  const bounded = (s: { sql: string; values: V[] }) =>
    q.maxBytes === undefined
      ? s
      : {
          sql:
            `SELECT * FROM (SELECT s.*, sum(s.k_size) OVER w - s.k_size AS k_before, lead(1) OVER w IS NOT NULL AS k_more ` +
            `FROM (${s.sql}) s WINDOW w AS (${orderBy} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) c WHERE c.k_before < ? ${orderBy}`,
          values: [...s.values, q.maxBytes],
        };
  const windows = q.windows ? timeWindows(q.time, readDir, cursor ? Date.parse(cursor.t) : undefined, q.windows.bounds) : [[]];
  const rows: R[] = [];
  for (const window of windows) {
    const { sql, values } = bounded(statement(window, n - rows.length));
    rows.push(...(await run<R>(db, sql, values)));
    if (rows.length >= n) break;
  }
  let keep = Math.min(rows.length, page.limit);
  if (cut && keep > 0) keep = await cut(rows.slice(0, keep));
  const more = rows.length > keep || rows[keep - 1]?.k_more === true;
  const res = pageOf(rows.slice(0, keep), more, start, q.kind, (r) => ({
    t: r.k_c,
    i: r.k_id,
    ...(q.tenant ? { n: r.k_tenant as string } : {}),
  }));
  return { rows: res.rows, pagination: { order_by: 'time', dir, limit: page.limit, next: res.next, prev: res.prev } };
}

export const stripKeys = <T extends object>(r: T): Omit<T, keyof KeyRow> => {
  const { k_time: _t, k_id: _i, k_tenant: _n, k_c: _c, k_size: _s, k_before: _b, k_more: _m, ...rest } = r as T & KeyRow;
  return rest;
};

export const pairKey = (tenant: string, id: string) => `${tenant}\u0000${id}`;

export const groupBy = <T>(items: readonly T[], key: (x: T) => string): Map<string, T[]> => {
  const m = new Map<string, T[]>();
  for (const x of items) {
    const k = key(x);
    const list = m.get(k);
    if (list) list.push(x);
    else m.set(k, [x]);
  }
  return m;
};

export function emptyPage<T>(page: ListPage): Page<T> {
  return { models: [], pagination: { order_by: 'time', dir: page.dir ?? 'desc', limit: page.limit, next: null, prev: null } };
}

/** (tenant, destination) pairs for destination ids given without a tenant (admin listings). */
export async function destinationPairs(q: Q, tenants: Tenants, destinationIds: readonly string[]): Promise<[string, string][]> {
  if (tenants) return tenants.flatMap((t) => destinationIds.map((d): [string, string] => [t, d]));
  const c = inList('id', destinationIds);
  const r = await q.db.raw(`SELECT tenant_id, id FROM destinations WHERE ${c.sql} ORDER BY tenant_id, id`, c.values);
  return (r.rows as { tenant_id: string; id: string }[]).map((x) => [x.tenant_id, x.id]);
}
