import type { Knex } from 'knex';
import { AppError, type Problem } from '../../errors.ts';

/**
 * Every read query over events, deliveries and attempts (the write side is the pipeline's).
 *
 * Listings are keyset-paged with opaque cursors: a cursor names the boundary row by its sort key
 * (time to the microsecond, then id, then tenant where ids can repeat across tenants), the side it
 * pages towards and the direction it was issued for, so pages stay stable while rows arrive.
 *
 * Each listing is written so that Postgres reads one index range in order and stops after
 * limit + 1 rows: a listing over several tenants or destinations is a UNION ALL of one ordered,
 * limited branch per (tenant, destination), merged and cut again. docs/queries.md maps each
 * query to its index.
 *
 * A listing that returns event data also stops a page at a byte bound (API_PAGE_MAX_BYTES): it
 * takes items while the payload bytes of those already on it stay under the bound, so a page holds
 * at most the bound plus one item, and at least one item. The cursors then name the last item
 * returned, so paging on skips and repeats nothing. Sizes come from events.payload_bytes, never
 * from the payloads, and payloads past the cut are not read out of the database.
 */

export type Dir = 'asc' | 'desc';
export type AttemptStatus = 'success' | 'failed' | 'canceled';
export const ATTEMPT_STATUSES: readonly AttemptStatus[] = ['success', 'failed', 'canceled'];

/** Bounds on a time column; values are validated ISO 8601 strings, passed to Postgres as they are. */
export interface TimeRange {
  gte?: string;
  gt?: string;
  lte?: string;
  lt?: string;
}

export interface ListPage {
  limit: number;
  /** Sort direction; when absent, the cursor's own direction, else desc. */
  dir?: Dir;
  next?: string;
  prev?: string;
}

export interface Pagination {
  order_by: 'time';
  dir: Dir;
  limit: number;
  next: string | null;
  prev: string | null;
}

export interface Page<T> {
  models: T[];
  pagination: Pagination;
}

/** The tenants a caller may see: a list (a tenant token is always exactly its own), or null for all (admin). */
export type Tenants = readonly string[] | null;

export interface AttemptFilter {
  tenants: Tenants;
  destinationIds?: readonly string[];
  eventIds?: readonly string[];
  statuses?: readonly AttemptStatus[];
  topics?: readonly string[];
  time?: TimeRange;
}

export interface EventFilter {
  tenants: Tenants;
  /** Events delivered (routed) to any of these destinations. */
  destinationIds?: readonly string[];
  /** Events with a delivery (to one of destinationIds, when given) in one of these states. */
  statuses?: readonly AttemptStatus[];
  topics?: readonly string[];
  /** Bounds on the event time. */
  time?: TimeRange;
}

export interface AttemptView {
  id: string;
  tenant_id: string;
  destination_id: string;
  event_id: string;
  topic: string;
  status: AttemptStatus;
  code: string;
  /** Absent when the destination answered nothing worth keeping. */
  response_data?: Record<string, unknown>;
  attempt_number: number;
  manual: boolean;
  final: boolean;
  /** Absent for attempts recorded without a duration. */
  duration_ms?: number;
  time: string;
}

/**
 * An event as the API shows it. Optional fields the contract types as strings are left out when
 * absent, never null: clients that validate responses refuse null there.
 */
export interface EventView {
  id: string;
  tenant_id: string;
  /** The destination the event was published to (publish with destination_id), or in scope. */
  destination_id?: string;
  topic: string;
  time: string;
  eligible_for_retry: boolean;
  metadata: Record<string, unknown>;
  data?: unknown;
  /** When a delivery (to the destinations in scope) succeeded; absent while none has. */
  successful_at?: string;
  /** The delivery's status, when the listing is scoped to one destination. */
  status?: string;
}

/** Branches of a UNION beyond this many are folded into one IN (...) query instead. */
const FANOUT_MAX = 50;
/** Attempts returned for one event's deliveries, newest first. */
export const EVENT_ATTEMPTS_MAX = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CURSOR_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
/** Sort-key text of a timestamp, to the microsecond: what cursors carry. */
const keyText = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
/**
 * Payload bytes of the event row `e`: data and metadata as JSON text, as the writer stored them
 * (migration 005). Rows written before that column existed are measured here instead, which reads
 * (detoasts and prints) their payloads: correct, but costlier, until retention drops those rows.
 */
const PAYLOAD_BYTES = 'coalesce(e.payload_bytes, octet_length(e.data::text) + coalesce(octet_length(e.metadata::text), 0))';

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

// ---------------------------------------------------------------------------------------------
// Cursors

export type Kind = 'att' | 'evt';

interface Cursor {
  /** What it pages: attempts or events. */
  k: Kind;
  /** The direction of the listing it came from. */
  d: Dir;
  /** Boundary row: time (microseconds, UTC), id, tenant (events only). */
  t: string;
  i: string;
  n?: string;
  /** 'n': rows after the boundary in list order; 'p': rows before it. */
  w: 'n' | 'p';
}

const encode = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');

/**
 * A cursor at the given row: `next` pages the rows after it, `prev` the rows before it (time as
 * microsecond UTC text, as to_char(... 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') prints it). For tools that
 * jump deep into a listing (the benchmark); clients only ever use the cursors they are given.
 */
export function cursorAt(kind: Kind, dir: Dir, side: 'next' | 'prev', time: string, id: string, tenant?: string): string {
  return encode({ k: kind, d: dir, t: time, i: id, ...(tenant === undefined ? {} : { n: tenant }), w: side === 'next' ? 'n' : 'p' });
}

function decode(s: string, param: 'next' | 'prev', kind: Kind): Cursor {
  let c: Partial<Cursor> | undefined;
  try {
    c = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as Partial<Cursor>;
  } catch {
    c = undefined;
  }
  const ok =
    c &&
    typeof c === 'object' &&
    c.k === kind &&
    (c.d === 'asc' || c.d === 'desc') &&
    typeof c.t === 'string' &&
    CURSOR_TIME.test(c.t) &&
    typeof c.i === 'string' &&
    (kind === 'att' ? UUID.test(c.i) : c.i.length > 0 && typeof c.n === 'string') &&
    c.w === (param === 'next' ? 'n' : 'p');
  if (!ok) throw AppError.validation([{ path: `query.${param}`, message: 'is not a valid cursor for this listing' }]);
  return c as Cursor;
}

// ---------------------------------------------------------------------------------------------
// SQL building: `?` placeholders (knex turns them into $n), conditions carry their own values.

type V = Knex.Value;
type Cond = { sql: string; values: V[] };
const cond = (sql: string, ...values: V[]): Cond => ({ sql, values });
/** col (a text column) is one of values: one array parameter, so the statement text does not depend on how many. */
const inList = (col: string, values: readonly string[]): Cond =>
  values.length === 1 ? cond(`${col} = ?::text`, values[0] as V) : cond(`${col} = ANY(?::text[])`, [...values] as V);

function timeConds(col: string, t: TimeRange | undefined): Cond[] {
  const out: Cond[] = [];
  if (t?.gte) out.push(cond(`${col} >= ?::timestamptz`, t.gte));
  if (t?.gt) out.push(cond(`${col} > ?::timestamptz`, t.gt));
  if (t?.lte) out.push(cond(`${col} <= ?::timestamptz`, t.lte));
  if (t?.lt) out.push(cond(`${col} < ?::timestamptz`, t.lt));
  return out;
}

function where(conds: Cond[]): { sql: string; values: V[] } {
  return { sql: conds.length ? `WHERE ${conds.map((c) => c.sql).join(' AND ')}` : '', values: conds.flatMap((c) => c.values) };
}

/**
 * Runs a statement unnamed, so Postgres plans it with the actual values every time. (Named
 * statements would reuse a generic plan, which cannot see that one destination holds a third of
 * the rows and then picks the wrong index for it; the time windows keep planning cheap instead.)
 */
async function run<R>(db: Knex, sql: string, values: V[]): Promise<R[]> {
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

interface KeysetQuery {
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

type KeyRow = { k_time: Date; k_id: string; k_tenant?: string; k_c: string; k_size?: number; k_before?: unknown; k_more?: boolean };

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
async function keysetPage<R extends KeyRow>(
  db: Knex,
  q: KeysetQuery,
  page: ListPage,
  cut?: (rows: R[]) => Promise<number>,
): Promise<{ rows: R[]; pagination: Pagination }> {
  checkPage(page, q.kind);
  if (q.maxBytes !== undefined && q.windows) throw new Error('keysetPage: a byte bound in the statement needs a single window');
  const cursor = page.next ? decode(page.next, 'next', q.kind) : page.prev ? decode(page.prev, 'prev', q.kind) : undefined;
  const dir: Dir = page.dir ?? cursor?.d ?? 'desc';
  const backwards = cursor?.w === 'p';
  const readDir: Dir = backwards ? (dir === 'asc' ? 'desc' : 'asc') : dir;
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
  const pageRows = rows.slice(0, keep);
  if (backwards) pageRows.reverse();
  const hasNext = backwards ? cursor !== undefined : more;
  const hasPrev = backwards ? more : cursor !== undefined;
  const head = pageRows[0];
  const tail = pageRows.at(-1);
  const cursorOf = (r: R, w: 'n' | 'p'): string =>
    encode({ k: q.kind, d: dir, t: r.k_c, i: r.k_id, ...(q.tenant ? { n: r.k_tenant as string } : {}), w });
  return {
    rows: pageRows,
    pagination: {
      order_by: 'time',
      dir,
      limit: page.limit,
      next: hasNext && tail ? cursorOf(tail, 'n') : null,
      prev: hasPrev && head ? cursorOf(head, 'p') : null,
    },
  };
}

const stripKeys = <T extends object>(r: T): Omit<T, keyof KeyRow> => {
  const { k_time: _t, k_id: _i, k_tenant: _n, k_c: _c, k_size: _s, k_before: _b, k_more: _m, ...rest } = r as T & KeyRow;
  return rest;
};

// ---------------------------------------------------------------------------------------------
// Row shapes

/** An attempt as read: its view's fields with the time still a Date, and where its event is stored. */
type AttemptRow = Omit<AttemptView, 'time' | 'response_data' | 'duration_ms'> & {
  time: Date;
  response_data: Record<string, unknown> | null;
  duration_ms: number | null;
  event_received_key: string | null;
};

const ATTEMPT_COLUMNS =
  'a.id, a.tenant_id, a.destination_id, a.event_id, a.topic, a.status, a.code, a.response_data, a.attempt_number, a.manual, a.final, a.duration_ms, a.time, ' +
  `${keyText('a.event_received_at')} AS event_received_key`;

/**
 * Where each listed attempt's event is stored (its received_at, as key text): kept beside the view
 * rather than in it, so the API shape is unchanged and include=event can still read it (eventsOf).
 */
const eventPartitionOf = new WeakMap<object, string>();

const attemptView = (r: AttemptRow): AttemptView => {
  const view = attemptFields(r);
  if (r.event_received_key) eventPartitionOf.set(view, r.event_received_key);
  return view;
};

const attemptFields = (r: AttemptRow): AttemptView => ({
  id: r.id,
  tenant_id: r.tenant_id,
  destination_id: r.destination_id,
  event_id: r.event_id,
  topic: r.topic,
  status: r.status,
  code: r.code,
  ...(r.response_data === null ? {} : { response_data: r.response_data }),
  attempt_number: r.attempt_number,
  manual: r.manual,
  final: r.final,
  ...(r.duration_ms === null ? {} : { duration_ms: r.duration_ms }),
  time: r.time.toISOString(),
});

interface EventRow {
  id: string;
  tenant_id: string;
  destination_id: string | null;
  topic: string;
  time: Date;
  eligible_for_retry: boolean;
  metadata: Record<string, unknown> | null;
  data?: unknown;
  /** Internal: where its rows live (received_at, to the microsecond), and where the router sent it. */
  received_key: string | null;
  routed: string[];
}

/** An event's key, the partition it was found in, and the bytes a page counts for it. */
interface SizeRow {
  tenant_id: string;
  id: string;
  received_key: string;
  bytes: number;
}
/** What include=event counts per event: it embeds the metadata without the data. */
const METADATA_BYTES = 'coalesce(octet_length(e.metadata::text), 0)';

const eventColumns = (withData: boolean) =>
  `e.id, e.tenant_id, e.destination_id, e.topic, e.time, e.eligible_for_retry, e.metadata${withData ? ', e.data' : ''}, ` +
  `${keyText('e.received_at')} AS received_key, e.matched_destination_ids || e.skipped_destination_ids AS routed`;

/**
 * The span of the keys' received times, as a range on `col`: enough for partition pruning, and a
 * range (unlike a list of instants) leaves the index condition on the ids alone.
 */
function spanOf(col: string, keys: readonly EventKey[]): Cond[] {
  const times = keys.map((k) => k.received as string).sort(); // fixed-width UTC text sorts in time order
  return [cond(`${col} >= ?::timestamptz`, times[0] as string), cond(`${col} <= ?::timestamptz`, times.at(-1) as string)];
}

/** An event named by tenant and id, with the server time it was received (microsecond text) when known. */
interface EventKey {
  tenant: string;
  id: string;
  received?: string | null;
}

interface DeliveryState {
  tenant_id: string;
  event_id: string;
  destination_id: string;
  topic: string;
  status: string;
  successful_at: Date | null;
}

const pairKey = (tenant: string, id: string) => `${tenant}\u0000${id}`;

/** The embedded event of an attempt (`include=event` / `include=event.data`). */
export interface EmbeddedEvent {
  id: string;
  tenant_id: string;
  /** Absent unless the event was published to one destination. */
  destination_id?: string;
  topic: string;
  time: string;
  eligible_for_retry: boolean;
  metadata: Record<string, unknown>;
  data?: unknown;
}

const groupBy = <T>(items: readonly T[], key: (x: T) => string): Map<string, T[]> => {
  const m = new Map<string, T[]>();
  for (const x of items) {
    const k = key(x);
    const list = m.get(k);
    if (list) list.push(x);
    else m.set(k, [x]);
  }
  return m;
};

// ---------------------------------------------------------------------------------------------

export class QueryStore {
  private readonly db: Knex;
  /** Payload bytes a page of a listing that returns event data takes items up to (API_PAGE_MAX_BYTES). */
  private readonly pageMaxBytes: number;
  constructor(db: Knex, pageMaxBytes: number) {
    this.db = db;
    this.pageMaxBytes = pageMaxBytes;
  }

  /** Whether a tenant and (optionally) its destination exist, in one round trip. */
  async exists(tenantId: string, destinationId: string): Promise<{ tenant: boolean; destination: boolean }> {
    const [row] = await run<{ t: boolean; d: boolean }>(
      this.db,
      'SELECT EXISTS (SELECT 1 FROM tenants WHERE id = ?) AS t, EXISTS (SELECT 1 FROM destinations WHERE tenant_id = ? AND id = ?) AS d',
      [tenantId, tenantId, destinationId],
    );
    return { tenant: row?.t ?? false, destination: row?.d ?? false };
  }

  /** (tenant, destination) pairs for destination ids given without a tenant (admin listings). */
  private async destinationPairs(tenants: Tenants, destinationIds: readonly string[]): Promise<[string, string][]> {
    if (tenants) return tenants.flatMap((t) => destinationIds.map((d): [string, string] => [t, d]));
    const c = inList('id', destinationIds);
    const r = await this.db.raw(`SELECT tenant_id, id FROM destinations WHERE ${c.sql} ORDER BY tenant_id, id`, c.values);
    return (r.rows as { tenant_id: string; id: string }[]).map((x) => [x.tenant_id, x.id]);
  }

  // --- attempts ------------------------------------------------------------------------------

  /**
   * Attempts, newest first. With `embed` the page will carry each attempt's event, with its data
   * (include=event.data) or its metadata only (include=event): it then ends where the bytes of what
   * it embeds reach the bound, their sizes read before any payload (the payloads are the caller's to
   * load, for this page only: eventsOf).
   */
  async listAttempts(f: AttemptFilter, page: ListPage, opts: { embed?: 'event' | 'event.data' } = {}): Promise<Page<AttemptView>> {
    checkPage(page, 'att');
    const common: Cond[] = [];
    // Every status is no filter at all.
    if (f.statuses?.length && new Set(f.statuses).size < ATTEMPT_STATUSES.length) common.push(inList('a.status', [...new Set(f.statuses)]));
    if (f.topics?.length) common.push(inList('a.topic', f.topics));
    common.push(...timeConds('a.time', f.time));

    let branches: Cond[][] = [[]];
    if (f.eventIds?.length) {
      // (event_id, time, id): an event has few attempts, so the other filters are cheap rechecks.
      common.push(inList('a.event_id', f.eventIds));
      if (f.tenants) common.push(inList('a.tenant_id', f.tenants));
      if (f.destinationIds?.length) common.push(inList('a.destination_id', f.destinationIds));
    } else if (f.destinationIds?.length) {
      // (tenant_id, destination_id, time, id, status): one ordered range per destination.
      const pairs = await this.destinationPairs(f.tenants, f.destinationIds);
      if (!pairs.length) return emptyPage(page);
      if (pairs.length <= FANOUT_MAX) {
        branches = pairs.map(([t, d]) => [cond('a.tenant_id = ?', t), cond('a.destination_id = ?', d)]);
      } else {
        common.push(inList('a.tenant_id', [...new Set(pairs.map((p) => p[0]))]), inList('a.destination_id', f.destinationIds));
      }
    } else if (f.tenants) {
      // (tenant_id, time, id, status)
      if (f.tenants.length <= FANOUT_MAX) branches = f.tenants.map((t) => [cond('a.tenant_id = ?', t)]);
      else common.push(inList('a.tenant_id', f.tenants));
    }
    // else: every tenant, (time, id, status).

    const res = await keysetPage<AttemptRow & KeyRow>(
      this.db,
      {
        kind: 'att',
        select: `${ATTEMPT_COLUMNS}, a.time AS k_time, a.id AS k_id, ${keyText('a.time')} AS k_c`,
        from: 'attempts a',
        time: 'a.time',
        id: 'a.id',
        idType: 'uuid',
        common,
        branches,
        // An event's attempts are few: one query over every partition beats three.
        ...(f.eventIds?.length ? {} : { windows: { bounds: f.time ?? {} } }),
      },
      page,
      opts.embed
        ? async (rows) => {
            // An event shown by several attempts of the page counts once per attempt: each embeds it.
            const keys = rows.map((r) => ({ tenant: r.tenant_id, id: r.event_id, received: r.event_received_key }));
            return (await this.sizedCut(keys, opts.embed === 'event.data' ? PAYLOAD_BYTES : METADATA_BYTES)).keep;
          }
        : undefined,
    );
    return { models: res.rows.map((r) => attemptView(stripKeys(r) as AttemptRow)), pagination: res.pagination };
  }

  /**
   * One attempt by id, within the tenants (and destination) the caller may see; null otherwise,
   * so another tenant's attempt is indistinguishable from a missing one. A UUIDv7 carries its
   * creation time, which narrows the lookup to the partitions around it; ids that are not v7
   * (or whose attempt time is far from it) fall back to every partition.
   */
  async getAttempt(id: string, scope: { tenants: Tenants; destinationId?: string }): Promise<AttemptView | null> {
    if (!UUID.test(id)) return null;
    const conds: Cond[] = [cond('a.id = ?::uuid', id)];
    if (scope.tenants) conds.push(inList('a.tenant_id', scope.tenants));
    if (scope.destinationId !== undefined) conds.push(cond('a.destination_id = ?', scope.destinationId));
    const lookup = async (extra: Cond[]) => {
      const w = where([...conds, ...extra]);
      return (await run<AttemptRow>(this.db, `SELECT ${ATTEMPT_COLUMNS} FROM attempts a ${w.sql} LIMIT 1`, w.values))[0];
    };
    const ms = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    const plausible = id[14] === '7' && ms > Date.UTC(2000, 0, 1) && ms < Date.UTC(2200, 0, 1);
    let row: AttemptRow | undefined;
    if (plausible) {
      row = await lookup([
        cond('a.time >= ?::timestamptz', new Date(ms - 86_400_000).toISOString()),
        cond('a.time < ?::timestamptz', new Date(ms + 86_400_000).toISOString()),
      ]);
    }
    row ??= await lookup([]);
    return row ? attemptView(row) : null;
  }

  /**
   * Every attempt of one event (newest first, at most EVENT_ATTEMPTS_MAX): its deliveries; null
   * when the event is not visible. Attempts follow their event, so partitions older than a day
   * before the event was received are skipped (the day covers any clock difference between the
   * servers that stamp the two times).
   */
  async eventAttempts(tenants: Tenants, eventId: string, destinationIds?: readonly string[]): Promise<AttemptView[] | null> {
    const event = await this.findEvent(tenants, eventId, false);
    if (!event) return null;
    const conds = [cond('a.event_id = ?', event.id), cond('a.tenant_id = ?', event.tenant_id)];
    if (destinationIds?.length) conds.push(inList('a.destination_id', destinationIds));
    if (event.received_key) conds.push(cond(`a.time >= ?::timestamptz - interval '1 day'`, event.received_key));
    const w = where(conds);
    const rows = await run<AttemptRow>(
      this.db,
      `SELECT ${ATTEMPT_COLUMNS} FROM attempts a ${w.sql} ORDER BY a.time DESC, a.id DESC LIMIT ${EVENT_ATTEMPTS_MAX}`,
      w.values,
    );
    return rows.map(attemptView);
  }

  /**
   * The events of attempts, for `include=event`; keyed by tenant and event id. Attempts listed by
   * this store know their event's received_at, so those lookups are bounded to the span of the page's
   * events (per tenant: eventRows).
   */
  async eventsOf(keys: readonly { tenant_id: string; event_id: string }[], withData: boolean): Promise<Map<string, EmbeddedEvent>> {
    const rows = await this.eventRows<EventRow>(
      keys.map((k) => ({ tenant: k.tenant_id, id: k.event_id, received: eventPartitionOf.get(k) ?? null })),
      eventColumns(withData),
    );
    const out = new Map<string, EmbeddedEvent>();
    for (const [k, r] of rows) out.set(k, embedded(r, withData));
    return out;
  }

  /**
   * The sizes (`bytes`: an expression over the event row `e`) of the events of a page's keys, in
   * page order, read without any payload, and how many of them the page keeps under the byte bound
   * (bytesCut).
   */
  private async sizedCut(keys: readonly EventKey[], bytes: string): Promise<{ keep: number; rows: Map<string, SizeRow> }> {
    const rows = await this.eventRows<SizeRow>(keys, `e.tenant_id, e.id, ${keyText('e.received_at')} AS received_key, ${bytes} AS bytes`);
    const keep = bytesCut(
      keys.map((k) => rows.get(pairKey(k.tenant, k.id))?.bytes ?? 0),
      this.pageMaxBytes,
    );
    return { keep, rows };
  }

  /**
   * Event rows by key. The pipeline stores an event's deliveries with created_at = the event's
   * received_at, so a key found through its deliveries (or an attempt) knows its event's partition:
   * the keys of each tenant are first looked up within the span of their received_at (partition
   * pruning to that span), and only keys not found there are looked up in every partition.
   */
  private async eventRows<R extends { tenant_id: string; id: string }>(
    keys: readonly EventKey[],
    columns: string,
  ): Promise<Map<string, R>> {
    const out = new Map<string, R>();
    const lookup = async (list: readonly EventKey[], hinted: boolean) => {
      for (const [tenant, group] of groupBy(list, (k) => k.tenant)) {
        const conds = [cond('e.tenant_id = ?', tenant), inList('e.id', [...new Set(group.map((k) => k.id))])];
        if (hinted) conds.push(...spanOf('e.received_at', group));
        const w = where(conds);
        for (const row of await run<R>(this.db, `SELECT ${columns} FROM events e ${w.sql}`, w.values))
          out.set(pairKey(row.tenant_id, row.id), row);
      }
    };
    const hinted = keys.filter((k) => k.received);
    if (hinted.length) await lookup(hinted, true);
    const rest = keys.filter((k) => !out.has(pairKey(k.tenant, k.id)));
    if (rest.length) await lookup(rest, false);
    return out;
  }

  /**
   * Delivery states of events (optionally only towards some destinations), looked up in the
   * partition of each event (created_at = received_at) and, for events that should have more
   * delivery rows than found there (every destination they were routed to has one), everywhere.
   */
  private async deliveryStates(
    events: readonly EventKey[],
    destinationIds?: readonly string[],
    expected?: Map<string, number>,
  ): Promise<Map<string, DeliveryState[]>> {
    const out = new Map<string, DeliveryState[]>();
    const lookup = async (list: readonly EventKey[], hinted: boolean) => {
      for (const [tenant, group] of groupBy(list, (k) => k.tenant)) {
        const conds = [cond('tenant_id = ?', tenant), inList('event_id', [...new Set(group.map((k) => k.id))])];
        if (hinted) conds.push(...spanOf('created_at', group));
        if (destinationIds?.length) conds.push(inList('destination_id', destinationIds));
        const w = where(conds);
        const rows = await run<DeliveryState>(
          this.db,
          `SELECT tenant_id, event_id, destination_id, topic, status, successful_at FROM deliveries ${w.sql}`,
          w.values,
        );
        for (const row of rows) {
          const k = pairKey(row.tenant_id, row.event_id);
          const l = out.get(k) ?? [];
          if (!l.some((x) => x.destination_id === row.destination_id)) l.push(row);
          out.set(k, l);
        }
      }
    };
    const hinted = events.filter((k) => k.received);
    if (hinted.length) await lookup(hinted, true);
    const rest = events.filter((k) => {
      const key = pairKey(k.tenant, k.id);
      if (!k.received) return true;
      const want = expected?.get(key);
      return want !== undefined && (out.get(key)?.length ?? 0) < want;
    });
    if (rest.length) await lookup(rest, false);
    return out;
  }

  /** How many delivery rows each event should have (toward `destinationIds`, when given). */
  private static expectedDeliveries(rows: Iterable<EventRow>, destinationIds?: readonly string[]): Map<string, number> {
    const m = new Map<string, number>();
    for (const r of rows) {
      const routed = new Set(r.routed);
      m.set(pairKey(r.tenant_id, r.id), destinationIds?.length ? destinationIds.filter((d) => routed.has(d)).length : routed.size);
    }
    return m;
  }

  // --- events --------------------------------------------------------------------------------

  /**
   * Events, newest event time first. Without delivery filters the listing reads events directly;
   * with a destination or status filter it pages over the deliveries (which carry the event time)
   * and then loads the events of the page. Either way a page ends where the payload bytes of its
   * events reach the bound: read directly, the statement cuts it (running sum of payload_bytes);
   * through deliveries, the events' sizes are read first, and the page's events only once it is cut.
   */
  async listEvents(f: EventFilter, page: ListPage, opts: { scopedDestination?: string } = {}): Promise<Page<EventView>> {
    checkPage(page, 'evt');
    const statuses = f.statuses?.length ? [...new Set(f.statuses)] : undefined;
    const destinations = f.destinationIds?.length ? f.destinationIds : undefined;
    let keys: (EventKey & { time: Date })[];
    let pagination: Pagination;
    let loaded: Map<string, EventRow> | undefined;

    if (!destinations && !(statuses && f.tenants)) {
      // events (tenant_id, time, id) per tenant, or (time, id, tenant_id) across tenants.
      const common: Cond[] = [];
      if (f.topics?.length) common.push(inList('e.topic', f.topics));
      common.push(...timeConds('e.time', f.time));
      if (statuses) {
        // Admin, every tenant, status only: no index leads with status across tenants, so each
        // event in time order is checked for such a delivery (a primary-key probe).
        const c = inList('d.status', statuses);
        common.push(
          cond(`EXISTS (SELECT 1 FROM deliveries d WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id AND ${c.sql})`, ...c.values),
        );
      }
      let branches: Cond[][] = [[]];
      if (f.tenants) {
        if (f.tenants.length <= FANOUT_MAX) branches = f.tenants.map((t) => [cond('e.tenant_id = ?', t)]);
        else common.push(inList('e.tenant_id', f.tenants));
      }
      const res = await keysetPage<EventRow & KeyRow>(
        this.db,
        {
          kind: 'evt',
          select: `${eventColumns(true)}, e.time AS k_time, e.id AS k_id, e.tenant_id AS k_tenant, ${keyText('e.time')} AS k_c, ${PAYLOAD_BYTES} AS k_size`,
          from: 'events e',
          time: 'e.time',
          id: 'e.id',
          tenant: 'e.tenant_id',
          idType: 'text',
          common,
          branches,
          maxBytes: this.pageMaxBytes,
        },
        page,
      );
      pagination = res.pagination;
      loaded = new Map(res.rows.map((r) => [pairKey(r.tenant_id, r.id), stripKeys(r) as EventRow]));
      keys = res.rows.map((r) => ({ tenant: r.tenant_id, id: r.id, time: r.time, received: r.received_key }));
    } else {
      // deliveries (tenant_id, destination_id, event_time, event_id, status) per destination, or
      // (tenant_id, status, event_time, event_id) per status; grouped to one row per event.
      const common: Cond[] = [];
      if (f.topics?.length) common.push(inList('d.topic', f.topics));
      common.push(...timeConds('d.event_time', f.time));
      let branches: Cond[][];
      if (destinations) {
        const pairs = await this.destinationPairs(f.tenants, destinations);
        if (!pairs.length) return emptyPage(page);
        if (statuses) common.push(inList('d.status', statuses));
        if (pairs.length <= FANOUT_MAX) {
          branches = pairs.map(([t, d]) => [cond('d.tenant_id = ?', t), cond('d.destination_id = ?', d)]);
        } else {
          branches = [[inList('d.tenant_id', [...new Set(pairs.map((p) => p[0]))]), inList('d.destination_id', destinations)]];
        }
      } else {
        const tenants = f.tenants ?? [];
        const combos = tenants.flatMap((t) => (statuses ?? []).map((s): [string, string] => [t, s]));
        branches =
          combos.length <= FANOUT_MAX
            ? combos.map(([t, s]) => [cond('d.tenant_id = ?', t), cond('d.status = ?', s)])
            : [[inList('d.tenant_id', tenants), inList('d.status', statuses ?? [])]];
      }
      const found = new Map<string, EventRow>();
      const res = await keysetPage<KeyRow & { k_tenant: string; k_recv: string }>(
        this.db,
        {
          kind: 'evt',
          select: `d.event_time AS k_time, d.event_id AS k_id, d.tenant_id AS k_tenant, ${keyText('min(d.created_at)')} AS k_recv, ${keyText('d.event_time')} AS k_c`,
          from: 'deliveries d',
          group: { by: 'd.event_time, d.event_id, d.tenant_id', outer: 'k_time, k_id, k_tenant, min(k_recv) AS k_recv, min(k_c) AS k_c' },
          time: 'd.event_time',
          id: 'd.event_id',
          tenant: 'd.tenant_id',
          idType: 'text',
          common,
          branches,
        },
        page,
        async (rows) => {
          const ks = rows.map((r) => ({ tenant: r.k_tenant, id: r.k_id, received: r.k_recv }));
          const { keep, rows: sized } = await this.sizedCut(ks, PAYLOAD_BYTES);
          // Only then the events that stay, each from the partition it was found in: neither data
          // nor metadata past the cut leaves the database.
          const stay = ks.slice(0, keep).flatMap((k) => {
            const r = sized.get(pairKey(k.tenant, k.id));
            return r ? [{ tenant: r.tenant_id, id: r.id, received: r.received_key }] : [];
          });
          for (const [key, row] of await this.eventRows<EventRow>(stay, eventColumns(true))) found.set(key, row);
          return keep;
        },
      );
      pagination = res.pagination;
      keys = res.rows.map((r) => ({ tenant: r.k_tenant, id: r.k_id, time: r.k_time, received: r.k_recv }));
      loaded = found;
    }

    const scope = opts.scopedDestination ? [opts.scopedDestination] : destinations;
    const states = await this.deliveryStates(keys, scope, QueryStore.expectedDeliveries(loaded.values(), scope));
    const models = keys.map((k) => {
      const key = pairKey(k.tenant, k.id);
      const st = states.get(key) ?? [];
      // A delivery can outlive its event row (the writer lagging, or retention dropping the two
      // tables' partitions at different moments): the listing still shows it, from what the
      // delivery knows.
      const row = loaded.get(key) ?? {
        id: k.id,
        tenant_id: k.tenant,
        destination_id: null,
        topic: st[0]?.topic ?? '',
        time: k.time,
        eligible_for_retry: true,
        metadata: null,
        data: null,
        received_key: k.received ?? null,
        routed: [],
      };
      return eventView(row, st, true, opts.scopedDestination);
    });
    return { models, pagination };
  }

  /** An event row by id within the tenants in scope (the first tenant's, for an admin naming none). */
  private async findEvent(tenants: Tenants, eventId: string, withData: boolean): Promise<EventRow | undefined> {
    const conds = [cond('e.id = ?', eventId)];
    if (tenants) conds.push(inList('e.tenant_id', tenants));
    const w = where(conds);
    const [row] = await run<EventRow>(
      this.db,
      `SELECT ${eventColumns(withData)} FROM events e ${w.sql} ORDER BY e.tenant_id, e.received_at LIMIT 1`,
      w.values,
    );
    return row;
  }

  /**
   * One event with its data, within the tenants the caller may see. With `destinationId`, only
   * when the event was routed to that destination, and with that delivery's state.
   */
  async getEvent(tenants: Tenants, eventId: string, destinationId?: string): Promise<EventView | null> {
    const row = await this.findEvent(tenants, eventId, true);
    if (!row) return null;
    const scope = destinationId === undefined ? undefined : [destinationId];
    const key = { tenant: row.tenant_id, id: row.id, received: row.received_key };
    const states = (await this.deliveryStates([key], scope, QueryStore.expectedDeliveries([row], scope))).get(
      pairKey(row.tenant_id, row.id),
    );
    if (destinationId !== undefined && !states?.length && !row.routed.includes(destinationId) && row.destination_id !== destinationId) {
      return null;
    }
    return eventView(row, states ?? [], true, destinationId);
  }
}

function eventView(r: EventRow, states: DeliveryState[], withData: boolean, scopedDestination?: string): EventView {
  let successful: Date | null = null;
  for (const s of states) if (s.successful_at && (!successful || s.successful_at < successful)) successful = s.successful_at;
  const destinationId = scopedDestination ?? r.destination_id;
  const v: EventView = {
    id: r.id,
    tenant_id: r.tenant_id,
    ...(destinationId === null ? {} : { destination_id: destinationId }),
    topic: r.topic,
    time: r.time.toISOString(),
    eligible_for_retry: r.eligible_for_retry,
    metadata: r.metadata ?? {},
    ...(successful ? { successful_at: successful.toISOString() } : {}),
  };
  if (withData) v.data = r.data ?? null;
  if (scopedDestination !== undefined) v.status = states[0]?.status ?? 'pending';
  return v;
}

function embedded(r: EventRow, withData: boolean): EmbeddedEvent {
  const e: EmbeddedEvent = {
    id: r.id,
    tenant_id: r.tenant_id,
    ...(r.destination_id === null ? {} : { destination_id: r.destination_id }),
    topic: r.topic,
    time: r.time.toISOString(),
    eligible_for_retry: r.eligible_for_retry,
    metadata: r.metadata ?? {},
  };
  if (withData) e.data = r.data ?? null;
  return e;
}

/** What is wrong with the paging parameters of a listing of `kind` (empty when nothing). */
export function pageProblems(page: ListPage, kind: Kind): Problem[] {
  if (page.next && page.prev) return [{ path: 'query.next', message: 'cannot be combined with prev' }];
  try {
    const cursor = page.next ? decode(page.next, 'next', kind) : page.prev ? decode(page.prev, 'prev', kind) : undefined;
    if (cursor && page.dir && cursor.d !== page.dir)
      return [{ path: 'query.dir', message: `does not match the cursor, which pages dir=${cursor.d}` }];
  } catch (err) {
    if (err instanceof AppError) return err.data as Problem[];
    throw err;
  }
  return [];
}

/** Checks the paging parameters up front, so a bad cursor is refused even when the page would be empty. */
function checkPage(page: ListPage, kind: Kind): void {
  const problems = pageProblems(page, kind);
  if (problems.length) throw AppError.validation(problems);
}

function emptyPage<T>(page: ListPage): Page<T> {
  return { models: [], pagination: { order_by: 'time', dir: page.dir ?? 'desc', limit: page.limit, next: null, prev: null } };
}
