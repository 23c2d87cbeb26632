import type { Knex } from 'knex';
import { AppError } from '../errors.ts';

/**
 * Keyset pagination over (sort column, id) with opaque cursors. A cursor names the row it starts
 * after and the direction, so pages stay stable while new rows arrive; there is no `next` on the last
 * page and no `prev` on the first.
 */
export type Dir = 'asc' | 'desc';

interface CursorData {
  /** Sort value of the boundary row (ISO time). */
  v: string;
  /** Id of the boundary row. */
  id: string;
  /** 'n': rows after the boundary in list order; 'p': rows before it. */
  w: 'n' | 'p';
}

export function encodeCursor(c: CursorData): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

export function decodeCursor(s: string, param: string): CursorData {
  try {
    const c = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as CursorData;
    const timestamp = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d{1,6})?([+-]\d\d(:?\d\d)?|Z)?$/;
    if (typeof c.v === 'string' && timestamp.test(c.v) && typeof c.id === 'string' && (c.w === 'n' || c.w === 'p')) return c;
  } catch {
    // fall through
  }
  throw AppError.validation([{ path: `query.${param}`, message: 'is not a valid cursor' }]);
}

export interface PageRequest {
  limit: number;
  dir: Dir;
  next?: string | undefined;
  prev?: string | undefined;
}

export interface Page<T> {
  models: T[];
  pagination: { order_by: string; dir: Dir; limit: number; next: string | null; prev: string | null };
}

/**
 * Runs `q` (already filtered) one page at a time. `column` is the sort column (a timestamp) and
 * `idColumn` the tiebreaker. Cursors carry the timestamp as Postgres prints it, to the microsecond:
 * a JavaScript Date would round to milliseconds and repeat or skip rows at page edges.
 */
export async function paginate<R extends { id: string }>(
  db: Knex,
  q: Knex.QueryBuilder,
  opts: PageRequest & { column: string; idColumn: string; orderBy: string },
): Promise<Page<R>> {
  if (opts.next && opts.prev) throw AppError.validation([{ path: 'query.next', message: 'next and prev cannot be combined' }]);
  const cursor = opts.next ? decodeCursor(opts.next, 'next') : opts.prev ? decodeCursor(opts.prev, 'prev') : undefined;
  const backwards = cursor?.w === 'p';
  // Walking backwards means reading in the opposite order, then reversing the page.
  const readDir: Dir = backwards ? (opts.dir === 'asc' ? 'desc' : 'asc') : opts.dir;
  if (cursor) {
    const op = readDir === 'desc' ? '<' : '>';
    q.whereRaw(`(${opts.column}, ${opts.idColumn}) ${op} (?::timestamptz, ?)`, [cursor.v, cursor.id]);
  }
  q.orderBy([
    { column: opts.column, order: readDir },
    { column: opts.idColumn, order: readDir },
  ]).limit(opts.limit + 1);
  q.select(db.raw(`${opts.column}::text AS _cursor`));
  const rows = (await q) as (R & { _cursor?: string })[];
  const cursorOf = new Map<R, string>();
  for (const r of rows) {
    cursorOf.set(r, r._cursor as string);
    delete r._cursor;
  }
  const more = rows.length > opts.limit;
  const page = rows.slice(0, opts.limit);
  if (backwards) page.reverse();
  const first = page[0];
  const last = page.at(-1);
  const hasNext = backwards ? cursor !== undefined : more;
  const hasPrev = backwards ? more : cursor !== undefined;
  return {
    models: page,
    pagination: {
      order_by: opts.orderBy,
      dir: opts.dir,
      limit: opts.limit,
      next: hasNext && last ? encodeCursor({ v: cursorOf.get(last) as string, id: last.id, w: 'n' }) : null,
      prev: hasPrev && first ? encodeCursor({ v: cursorOf.get(first) as string, id: first.id, w: 'p' }) : null,
    },
  };
}
