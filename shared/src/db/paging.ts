import type { Knex } from 'knex';
import type { Problem } from '../errors.ts';
import { isRealDateTime } from '../time.ts';

/**
 * Keyset pagination with opaque cursors, for every cursor-paged listing (the gateway's event and
 * attempt queries, tenants, operator events). A cursor names the boundary row by its sort key (time
 * to the microsecond, then id, then tenant where ids can repeat across tenants), the side it pages
 * towards, the listing it belongs to and the direction that listing had, so pages stay stable while
 * rows arrive; there is no `next` on the last page and no `prev` on the first.
 *
 * Nothing here answers HTTP: a bad cursor is a Problem for the route to refuse (pageProblems) before
 * a store runs; a store handed one anyway throws a plain Error.
 */
export type Dir = 'asc' | 'desc';

/** What a cursor pages: attempts, events, tenants or operator events; a cursor of one is refused by the others. */
export type Kind = 'att' | 'evt' | 'ten' | 'op';

export interface Cursor {
  k: Kind;
  /** The direction of the listing it came from. */
  d: Dir;
  /** Boundary row: time (microseconds, UTC, as keyText prints it), id, tenant (events only). */
  t: string;
  i: string;
  n?: string;
  /** 'n': rows after the boundary in list order; 'p': rows before it. */
  w: 'n' | 'p';
}

/** The paging parameters of a listing. */
export interface ListPage {
  limit: number;
  /** Sort direction; when absent, the cursor's own direction, else desc. */
  dir?: Dir | undefined;
  next?: string | undefined;
  prev?: string | undefined;
}

export interface Pagination {
  order_by: string;
  dir: Dir;
  limit: number;
  next: string | null;
  prev: string | null;
}

export interface Page<T> {
  models: T[];
  pagination: Pagination;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CURSOR_TIME = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.\d{6}Z$/;

/** Whether `t` is a time as keyText prints it and a real instant (as every stored time is). */
function isCursorTime(t: string): boolean {
  const m = CURSOR_TIME.exec(t);
  if (!m) return false;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  return isRealDateTime(y, mo, d, h, mi, s);
}

/** Postgres text cannot hold NUL: a string with one could name no row, and would fail the statement. */
const isText = (s: unknown): s is string => typeof s === 'string' && !s.includes('\u0000');

/** Sort-key text of a timestamp column, to the microsecond (a JavaScript Date would round to ms): what cursors carry. */
export const keyText = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export const encodeCursor = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');

/**
 * A cursor at the given row: `next` pages the rows after it, `prev` the rows before it (time as
 * keyText prints it). For tools that jump deep into a listing (the benchmark); clients only ever use
 * the cursors they are given.
 */
export function cursorAt(kind: Kind, dir: Dir, side: 'next' | 'prev', time: string, id: string, tenant?: string): string {
  return encodeCursor({ k: kind, d: dir, t: time, i: id, ...(tenant === undefined ? {} : { n: tenant }), w: side === 'next' ? 'n' : 'p' });
}

/** The cursor `s`, given as `param`, when it is one of this listing's; undefined otherwise. */
export function decodeCursor(s: string, param: 'next' | 'prev', kind: Kind): Cursor | undefined {
  let c: Partial<Cursor> | undefined;
  try {
    c = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as Partial<Cursor>;
  } catch {
    return undefined;
  }
  const ok =
    c &&
    typeof c === 'object' &&
    c.k === kind &&
    (c.d === 'asc' || c.d === 'desc') &&
    typeof c.t === 'string' &&
    isCursorTime(c.t) &&
    isText(c.i) &&
    (kind === 'att' ? UUID.test(c.i) : c.i.length > 0) &&
    (kind === 'evt' ? isText(c.n) : c.n === undefined || isText(c.n)) &&
    c.w === (param === 'next' ? 'n' : 'p');
  return ok ? (c as Cursor) : undefined;
}

/** What is wrong with the paging parameters of a listing of `kind` (empty when nothing). */
export function pageProblems(page: ListPage, kind: Kind): Problem[] {
  if (page.next && page.prev) return [{ path: 'query.next', message: 'cannot be combined with prev' }];
  const param = page.next ? 'next' : page.prev ? 'prev' : undefined;
  if (!param) return [];
  const cursor = decodeCursor(page[param] as string, param, kind);
  if (!cursor) return [{ path: `query.${param}`, message: 'is not a valid cursor for this listing' }];
  if (page.dir && cursor.d !== page.dir) return [{ path: 'query.dir', message: `does not match the cursor, which pages dir=${cursor.d}` }];
  return [];
}

/**
 * The cursor of a page the route has checked (pageProblems), and the direction the listing reads
 * in: `dir` when given (whether it must match the cursor's is the route's rule), else the cursor's.
 * A page that was not checked is a programming error here, not a client's: a plain Error.
 */
export function startOf(page: ListPage, kind: Kind): { cursor: Cursor | undefined; dir: Dir; backwards: boolean; readDir: Dir } {
  const problems = pageProblems({ ...page, dir: undefined }, kind);
  if (problems.length) throw new Error(`unchecked paging parameters: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`);
  const cursor = page.next ? decodeCursor(page.next, 'next', kind) : page.prev ? decodeCursor(page.prev, 'prev', kind) : undefined;
  const dir: Dir = page.dir ?? cursor?.d ?? 'desc';
  // Walking backwards means reading in the opposite order, then reversing the page.
  const backwards = cursor?.w === 'p';
  return { cursor, dir, backwards, readDir: backwards ? (dir === 'asc' ? 'desc' : 'asc') : dir };
}

/**
 * The page's rows in list order and its cursors, from the rows kept (in read order) and whether
 * more were read past them. `key` names a row's boundary (time, id, tenant).
 */
export function pageOf<R>(
  rows: R[],
  more: boolean,
  start: { cursor: Cursor | undefined; dir: Dir; backwards: boolean },
  kind: Kind,
  key: (r: R) => { t: string; i: string; n?: string },
): { rows: R[]; next: string | null; prev: string | null } {
  if (start.backwards) rows.reverse();
  const hasNext = start.backwards ? start.cursor !== undefined : more;
  const hasPrev = start.backwards ? more : start.cursor !== undefined;
  const head = rows[0];
  const tail = rows.at(-1);
  const cursorOf = (r: R, w: 'n' | 'p') => encodeCursor({ k: kind, d: start.dir, ...key(r), w });
  return { rows, next: hasNext && tail ? cursorOf(tail, 'n') : null, prev: hasPrev && head ? cursorOf(head, 'p') : null };
}

/**
 * Runs `q` (already filtered) one page at a time: the keyset listing of one table, for the listings
 * that need nothing more (tenants, operator events). `column` is the sort column (a timestamp) and
 * `idColumn` the tiebreaker.
 */
export async function paginate<R extends { id: string }>(
  db: Knex,
  q: Knex.QueryBuilder,
  opts: ListPage & { kind: Kind; column: string; idColumn: string; orderBy: string },
): Promise<Page<R>> {
  const start = startOf(opts, opts.kind);
  const { cursor, readDir } = start;
  if (cursor) {
    const op = readDir === 'desc' ? '<' : '>';
    q.whereRaw(`(${opts.column}, ${opts.idColumn}) ${op} (?::timestamptz, ?)`, [cursor.t, cursor.i]);
  }
  q.orderBy([
    { column: opts.column, order: readDir },
    { column: opts.idColumn, order: readDir },
  ]).limit(opts.limit + 1);
  q.select(db.raw(`${keyText(opts.column)} AS _cursor`));
  const rows = (await q) as (R & { _cursor?: string })[];
  const keyOf = new Map<R, string>();
  for (const r of rows) {
    keyOf.set(r, r._cursor as string);
    delete r._cursor;
  }
  const page = pageOf(rows.slice(0, opts.limit), rows.length > opts.limit, start, opts.kind, (r) => ({
    t: keyOf.get(r) as string,
    i: r.id,
  }));
  return {
    models: page.rows,
    pagination: { order_by: opts.orderBy, dir: start.dir, limit: opts.limit, next: page.next, prev: page.prev },
  };
}
