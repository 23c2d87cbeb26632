import type { PageRequest } from '@switchyard/shared/db/paging.ts';

/** Query parameters of every cursor-paged listing. */
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

export function pageRequest(q: Record<string, unknown>): PageRequest {
  return {
    limit: Number(q.limit ?? 100),
    dir: q.dir === 'asc' ? 'asc' : 'desc',
    next: typeof q.next === 'string' ? q.next : undefined,
    prev: typeof q.prev === 'string' ? q.prev : undefined,
  };
}
