// What operators watch, through the API: a destination's health (consecutive failures, last success
// and failure, why it is disabled) and the operator events (alerts, auto-disables) the attempts
// service raises, which otherwise reach only the operator-events topic and the optional callback.
// Tenant-scoped under every tenant prefix; with the admin key and no tenant in the path, operator
// events of every tenant.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { OperationsStore } from '@switchyard/shared/db/stores/operations.ts';
import { AppError } from '@switchyard/shared/errors.ts';
import { requireTenantAccess } from '../auth.ts';
import type { Ctx } from '../app.ts';
import { existingTenant, idParam, multi, type TenantReq } from './common.ts';
import { pageQuerySchema, pageRequest } from './paging.ts';

const time = { type: ['string', 'null'], format: 'date-time' } as const;

const healthSchema = {
  type: 'object',
  properties: {
    destination_id: { type: 'string' },
    consecutive_failures: { type: 'integer', description: 'Failed attempts in a row since the last success.' },
    last_attempt_at: time,
    last_success_at: time,
    last_failure_at: time,
    last_failure_code: { type: ['string', 'null'], description: "'ERR' or the HTTP status of the newest failed attempt." },
    disabled_at: time,
    disabled_reason: {
      type: ['string', 'null'],
      enum: ['consecutive_failures', 'manual', null],
      description: 'consecutive_failures: disabled by ALERT_AUTO_DISABLE_DESTINATION; manual: through the API; null: enabled.',
    },
  },
} as const;

const operatorEventSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: ['alert.consecutive_failure', 'destination.auto_disabled'] },
    time: { type: 'string', format: 'date-time' },
    tenant_id: { type: 'string' },
    destination_id: { type: 'string' },
    data: { type: 'object', additionalProperties: true },
  },
} as const;

const listQuery = {
  type: 'object',
  properties: {
    ...pageQuerySchema.properties,
    type: { type: 'string', description: 'Only these types (comma-separated or repeated).' },
    destination_id: { type: 'string', description: 'Only events of this destination.' },
  },
} as const;

type ListReq = FastifyRequest<{ Params: { tenant_id?: string }; Querystring: Record<string, unknown> }>;

export function operationsRoutes(ctx: Ctx) {
  const store = new OperationsStore(ctx.db);
  return async (app: FastifyInstance) => {
    app.get(
      '/destinations/:destination_id/health',
      {
        schema: {
          tags: ['destinations'],
          summary: "A destination's health: consecutive failures, last success and failure, why it is disabled",
          params: { type: 'object', properties: { tenant_id: idParam, destination_id: idParam } },
          response: { 200: healthSchema },
        },
      },
      async (req: TenantReq) => {
        const tenantId = await existingTenant(ctx, req);
        const health = await store.health(tenantId, req.params.destination_id ?? '');
        if (!health) throw new AppError('DESTINATION_NOT_FOUND');
        return health;
      },
    );

    app.get(
      '/operator-events',
      {
        schema: {
          tags: ['operations'],
          summary: 'Operator events (alerts, auto-disables), newest first; the admin key without a tenant in the path lists every tenant',
          params: { type: 'object', properties: { tenant_id: idParam } },
          querystring: listQuery,
          response: {
            200: {
              type: 'object',
              properties: {
                models: { type: 'array', items: operatorEventSchema },
                pagination: { type: 'object', additionalProperties: true },
              },
            },
          },
        },
      },
      async (req: ListReq) => {
        const p = req.principal;
        const tenantId = req.params.tenant_id ?? (p.kind === 'tenant' ? p.tenantId : null);
        if (tenantId !== null) {
          requireTenantAccess(p, tenantId);
          await existingTenant(ctx, req as TenantReq);
        }
        const destinationId = typeof req.query.destination_id === 'string' ? req.query.destination_id : undefined;
        return store.listEvents(tenantId, { type: multi(req.query, 'type'), destinationId }, pageRequest(req.query));
      },
    );
  };
}
