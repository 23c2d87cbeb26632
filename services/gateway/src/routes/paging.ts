import { type Kind, type ListPage, pageProblems } from '@switchyard/shared/db/paging.ts';
import { AppError } from '@switchyard/shared/errors.ts';

/** Query parameters of the tenant and operator event listings (the event and attempt listings: attempts.ts, parsePage). */
export const pageQuerySchema = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
    next: { type: 'string', minLength: 1 },
    prev: { type: 'string', minLength: 1 },
    order_by: { type: 'string', enum: ['time', 'created_at'] },
    dir: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
  },
} as const;

/** The paging parameters of a listing of `kind`; a cursor that is not one of its own is a 422 here, before any query. */
export function pageRequest(q: Record<string, unknown>, kind: Kind): ListPage & { dir: 'asc' | 'desc' } {
  const page = {
    limit: Number(q.limit ?? 100),
    dir: q.dir === 'asc' ? ('asc' as const) : ('desc' as const),
    next: typeof q.next === 'string' ? q.next : undefined,
    prev: typeof q.prev === 'string' ? q.prev : undefined,
  };
  // dir has a default, so it is not checked against the cursor's: the listing reads in the dir asked for.
  const problems = pageProblems({ ...page, dir: undefined }, kind);
  if (problems.length) throw AppError.validation(problems);
  return page;
}
