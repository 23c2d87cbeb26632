import type { FastifyInstance } from 'fastify';
import { finishErasure } from '@switchyard/shared/db/erasure.ts';
import { AppError } from '@switchyard/shared/errors.ts';
import type { Knex } from '@switchyard/shared/db/index.ts';
import type { Auth } from '../auth.ts';
import type { Announce } from '../destination-changes.ts';
import type { TenantStore } from '../tenant-store.ts';
import type { Erasure } from './deps.ts';
import { pageQuerySchema, pageRequest } from './paging.ts';
import { existingTenant, idParam, stringMap, type TenantReq, tenantOf } from './common.ts';
import { manyQueryDocs, Problems, parseIds } from './attempts.ts';
import { answers, ref } from '../openapi.ts';

/** How long creating a tenant may spend erasing a deleted one of the same id before answering 503. */
const ERASE_IN_REQUEST_MS = 5_000;

/** Tenant ids that would shadow a fixed path under /api/v1. */
export const RESERVED_TENANT_IDS = new Set([
  'tenants',
  'publish',
  'attempts',
  'events',
  'retry',
  'replay',
  'destination-types',
  'destinations',
  'destination',
  'topics',
  'healthz',
  'livez',
  'readyz',
  'metrics',
  'operator-events',
  'openapi.json',
  'portal',
  'token',
  'docs',
]);

/** PUT's optional body: `{metadata}`, or nothing. */
export const tenantUpsertBody = {
  type: ['object', 'null'],
  description: 'Optional: an empty body (or none) creates the tenant without metadata.',
  additionalProperties: false,
  properties: { metadata: stringMap },
} as const;

export interface TenantRouteDeps {
  tenants: Pick<TenantStore, 'exists' | 'upsert' | 'get' | 'delete'>;
  /** Finishes a recreated tenant's erasure before it is stored again. */
  db: Knex;
  announce: Announce;
  erasure: Erasure;
  auth: Pick<Auth, 'issueTenantToken'>;
  /**
   * Where the API is reached from outside (API_BASE_URL, else where it listens): the portal URL's
   * origin, read per request (the bound port is known once listening).
   */
  baseUrl: () => string;
}

/** PUT, GET and DELETE of the tenant itself. */
function tenantRecordRoutes(app: FastifyInstance, deps: TenantRouteDeps) {
  app.put<{ Params: { tenant_id: string }; Body: { metadata?: Record<string, string> } | null }>(
    '',
    {
      config: { adminOnly: true },
      schema: {
        tags: ['tenants'],
        summary: 'Create a tenant (idempotent); 201 when created, 200 when it existed',
        params: { type: 'object', properties: { tenant_id: idParam } },
        body: ref('TenantUpsert'),
        response: answers({ 200: 'Tenant', 201: 'Tenant' }),
      },
    },
    async (req, reply) => {
      const id = req.params.tenant_id;
      if (!id) throw AppError.validation([{ path: 'params.tenant_id', message: 'is required' }]);
      if (RESERVED_TENANT_IDS.has(id.toLowerCase())) throw new AppError('TENANT_ID_RESERVED', `"${id}" is reserved by a fixed path.`);
      // A tenant created again under a deleted one's id starts empty: what is left of the old one goes first.
      if (!(await finishErasure(deps.db, id, ERASE_IN_REQUEST_MS))) {
        void reply.header('retry-after', '5');
        throw new AppError('SERVICE_UNAVAILABLE', 'A deleted tenant of this id is still being erased; retry shortly.');
      }
      const { tenant, created } = await deps.tenants.upsert(id, req.body?.metadata);
      reply.status(created ? 201 : 200);
      return tenant;
    },
  );

  app.get('', { schema: { tags: ['tenants'], summary: 'Get a tenant', response: answers({ 200: 'Tenant' }) } }, async (req: TenantReq) => {
    const tenant = await deps.tenants.get(tenantOf(req));
    if (!tenant) throw new AppError('TENANT_NOT_FOUND');
    return tenant;
  });

  app.delete(
    '',
    {
      config: { adminOnly: true },
      schema: {
        tags: ['tenants'],
        summary: 'Delete a tenant: its destinations at once, its events, deliveries, attempts and idempotency keys in the background',
        response: answers({ 200: 'Success' }),
      },
    },
    async (req: TenantReq) => {
      const tenantId = tenantOf(req);
      if (!(await deps.tenants.delete(tenantId))) throw new AppError('TENANT_NOT_FOUND');
      await deps.announce({ tenant_id: tenantId, destination_id: null, change: 'tenant_deleted' });
      deps.erasure.kick();
      return { success: true };
    },
  );
}

/** A tenant token, and a portal URL carrying one (admin only). */
function tenantAccessRoutes(app: FastifyInstance, deps: TenantRouteDeps) {
  app.get(
    '/token',
    {
      config: { adminOnly: true },
      schema: { tags: ['tenants'], summary: 'A 24 h JWT scoped to the tenant (admin only)', response: answers({ 200: 'TenantToken' }) },
    },
    async (req: TenantReq) => {
      const tenantId = await existingTenant(deps.tenants, req);
      return { token: await deps.auth.issueTenantToken(tenantId), tenant_id: tenantId };
    },
  );

  app.get<{ Querystring: { theme?: 'light' | 'dark' } }>(
    '/portal',
    {
      config: { adminOnly: true },
      schema: {
        tags: ['tenants'],
        summary: 'A portal URL carrying a tenant token (admin only)',
        querystring: { type: 'object', properties: { theme: { type: 'string', enum: ['light', 'dark'] } } },
        response: answers({ 200: 'PortalRedirect' }),
      },
    },
    async (req) => {
      const tenantId = await existingTenant(deps.tenants, req as unknown as TenantReq);
      const url = new URL('/portal', deps.baseUrl());
      url.searchParams.set('token', await deps.auth.issueTenantToken(tenantId));
      url.searchParams.set('tenant_id', tenantId);
      if (req.query.theme) url.searchParams.set('theme', req.query.theme);
      return { redirect_url: url.toString(), tenant_id: tenantId };
    },
  );
}

export function tenantRoutes(deps: TenantRouteDeps) {
  return async (app: FastifyInstance) => {
    tenantRecordRoutes(app, deps);
    tenantAccessRoutes(app, deps);
  };
}

/** GET /api/v1/tenants: every tenant, cursor-paged (admin only). */
export function tenantListRoutes(deps: { tenants: Pick<TenantStore, 'list'> }) {
  return async (app: FastifyInstance) => {
    app.get<{ Querystring: Record<string, string> }>(
      '/tenants',
      {
        config: { adminOnly: true },
        schema: {
          tags: ['tenants'],
          summary: 'List tenants (admin only)',
          querystring: {
            ...pageQuerySchema,
            properties: { ...pageQuerySchema.properties, id: manyQueryDocs('These tenants, by id.') },
          },
          response: answers({ 200: 'TenantPage' }),
        },
      },
      async (req) => {
        const p = new Problems();
        const ids = parseIds(req.query, 'id', p);
        p.throwIfAny();
        return deps.tenants.list(pageRequest(req.query, 'ten'), ids);
      },
    );
  };
}
