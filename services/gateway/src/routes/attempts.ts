import type { FastifyInstance } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import type { Ctx } from '../app.ts';
import { existingTenant, idParam, type TenantReq } from './common.ts';
import { pageQuerySchema, pageRequest } from './paging.ts';

export function attemptRoutes(ctx: Ctx) {
  return async (app: FastifyInstance) => {
    app.get<{ Querystring: Record<string, unknown> }>(
      '/destinations/:destination_id/attempts',
      {
        schema: {
          tags: ['attempts'],
          summary: 'List the attempts of a destination, newest first, cursor-paged',
          params: { type: 'object', properties: { tenant_id: idParam, destination_id: idParam } },
          querystring: pageQuerySchema,
        },
      },
      async (req) => {
        const r = req as unknown as TenantReq;
        const tenantId = await existingTenant(ctx, r);
        const destinationId = r.params.destination_id ?? '';
        if (!(await ctx.destinations.get(tenantId, destinationId))) throw new AppError('DESTINATION_NOT_FOUND');
        return ctx.attempts.listByDestination(tenantId, destinationId, pageRequest(req.query));
      },
    );
  };
}
