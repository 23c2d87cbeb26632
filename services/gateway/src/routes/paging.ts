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
    // No schema default: left out, a cursor keeps the direction it was issued for (else desc).
    dir: { type: 'string', enum: ['asc', 'desc'], description: "Sort direction; default desc, or the cursor's own." },
  },
} as const;

/**
 * The paging parameters of a listing of `kind`, as the event and attempt listings take them: a
 * cursor that is not one of its own, or a `dir` other than the cursor's, is a 422 here, before any
 * query.
 */
export function pageRequest(q: Record<string, unknown>, kind: Kind): ListPage {
  const page: ListPage = {
    limit: Number(q.limit ?? 100),
    dir: q.dir === 'asc' || q.dir === 'desc' ? q.dir : undefined,
    next: typeof q.next === 'string' ? q.next : undefined,
    prev: typeof q.prev === 'string' ? q.prev : undefined,
  };
  const problems = pageProblems(page, kind);
  if (problems.length) throw AppError.validation(problems);
  return page;
}
