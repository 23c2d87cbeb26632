import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import { newId } from '@switchyard/shared/ids.ts';
import { validateFields } from '@switchyard/shared/destinations/fields.ts';
import { isDestinationType, REGISTRY } from '@switchyard/shared/destinations/registry.ts';
import { generateWebhookSecret } from '@switchyard/shared/destinations/types/webhook.ts';
import { DESTINATION_TYPES } from '@switchyard/shared/kafka/topics.ts';
import { requireAdmin, requireTenantAccess } from '../auth.ts';
import type { Ctx } from '../app.ts';
import { destinationView } from '../destination-view.ts';

/** Tenant ids that would shadow a fixed path under /api/v1. */
export const RESERVED_TENANT_IDS = new Set([
  'tenants',
  'publish',
  'attempts',
  'events',
  'retry',
  'destination-types',
  'destinations',
  'topics',
  'healthz',
  'openapi.json',
  'portal',
  'token',
  'docs',
]);

const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;
const topicsSchema = {
  anyOf: [
    { type: 'string', const: '*' },
    { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
  ],
} as const;

const createDestinationSchema = {
  type: 'object',
  required: ['type', 'topics'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', maxLength: 255 },
    type: { type: 'string', enum: [...DESTINATION_TYPES] },
    topics: topicsSchema,
    config: { type: 'object' },
    credentials: { type: ['object', 'null'] },
    filter: { type: ['object', 'null'] },
    delivery_metadata: stringMap,
    metadata: stringMap,
    disabled_at: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

interface CreateDestinationBody {
  id?: string;
  type: (typeof DESTINATION_TYPES)[number];
  topics: string | string[];
  config?: Record<string, unknown>;
  credentials?: Record<string, unknown> | null;
  filter?: Record<string, unknown> | null;
  delivery_metadata?: Record<string, string>;
  metadata?: Record<string, string>;
  disabled_at?: string | null;
}

type TenantReq = FastifyRequest<{ Params: { tenant_id: string; destination_id?: string } }>;

export function tenantScopedRoutes(ctx: Ctx) {
  /** The tenant a request addresses, after checking the caller may touch it. */
  const tenantOf = (req: TenantReq): string => {
    const id = req.params.tenant_id;
    requireTenantAccess(req.principal, id);
    return id;
  };
  const existingTenant = async (req: TenantReq): Promise<string> => {
    const id = tenantOf(req);
    if (!(await ctx.tenants.exists(id))) throw new AppError('TENANT_NOT_FOUND');
    return id;
  };
  const normalizeTopics = (topics: string | string[]): string[] => {
    const list = typeof topics === 'string' ? [topics] : [...new Set(topics)];
    if (list.includes('*')) return ['*'];
    const allowed = ctx.config.TOPICS;
    if (!allowed.includes('*')) {
      const unknown = list.filter((t) => !allowed.includes(t));
      if (unknown.length)
        throw AppError.validation(unknown.map((t) => ({ path: 'body.topics', message: `"${t}" is not a configured topic` })));
    }
    return list;
  };

  return async (app: FastifyInstance) => {
    app.put<{ Params: { tenant_id: string }; Body: { metadata?: Record<string, string> } | undefined }>(
      '',
      {
        schema: {
          params: { type: 'object', properties: { tenant_id: { type: 'string', minLength: 1, maxLength: 255 } } },
          body: { type: ['object', 'null'], additionalProperties: false, properties: { metadata: stringMap } },
        },
      },
      async (req, reply) => {
        requireAdmin(req.principal);
        const id = req.params.tenant_id;
        if (RESERVED_TENANT_IDS.has(id.toLowerCase())) throw new AppError('TENANT_ID_RESERVED', `"${id}" is reserved by a fixed path.`);
        const { tenant, created } = await ctx.tenants.upsert(id, req.body?.metadata);
        reply.status(created ? 201 : 200);
        return tenant;
      },
    );

    app.get('', async (req: TenantReq) => {
      const tenant = await ctx.tenants.get(tenantOf(req));
      if (!tenant) throw new AppError('TENANT_NOT_FOUND');
      return tenant;
    });

    app.delete('', async (req: TenantReq) => {
      requireAdmin(req.principal);
      if (!(await ctx.tenants.delete(req.params.tenant_id))) throw new AppError('TENANT_NOT_FOUND');
      return { success: true };
    });

    app.get('/destinations', async (req: TenantReq) => {
      const tenantId = await existingTenant(req);
      return (await ctx.destinations.list(tenantId)).map(destinationView);
    });

    app.post<{ Params: { tenant_id: string }; Body: CreateDestinationBody }>(
      '/destinations',
      { schema: { body: createDestinationSchema } },
      async (req, reply) => {
        const tenantId = await existingTenant(req as unknown as TenantReq);
        const body = req.body;
        if (!isDestinationType(body.type)) throw AppError.validation([{ path: 'body.type', message: 'is not a destination type' }]);
        const def = REGISTRY[body.type];
        const problems = [];
        if (body.config === undefined && !def.configOptional) problems.push({ path: 'body.config', message: 'is required' });
        if ((body.credentials === undefined || body.credentials === null) && !def.credentialsOptional) {
          problems.push({ path: 'body.credentials', message: 'is required' });
        }
        const config = body.config ?? {};
        const credentials = { ...(body.credentials ?? {}) };
        problems.push(...validateFields(def.config_fields, config, 'body.config'));
        problems.push(...validateFields(def.credential_fields, credentials, 'body.credentials'));
        if (req.principal.kind !== 'admin') {
          for (const f of def.credential_fields) {
            if (f.adminOnly && credentials[f.key] !== undefined)
              problems.push({ path: `body.credentials.${f.key}`, message: 'may only be set with the admin API key' });
          }
        }
        if (problems.length) throw AppError.validation(problems);
        const topics = normalizeTopics(body.topics);
        if (body.type === 'webhook') {
          delete credentials.rotate_secret;
          if (!credentials.secret) credentials.secret = generateWebhookSecret();
        }
        if ((await ctx.destinations.count(tenantId)) >= ctx.config.MAX_DESTINATIONS_PER_TENANT)
          throw new AppError('DESTINATION_LIMIT_REACHED');
        const id = body.id || newId();
        if (await ctx.destinations.get(tenantId, id)) throw new AppError('DESTINATION_EXISTS');
        const created = await ctx.destinations.create({
          id,
          tenant_id: tenantId,
          type: body.type,
          topics,
          config,
          credentials,
          delivery_metadata: body.delivery_metadata ?? null,
          metadata: body.metadata ?? null,
          filter: body.filter && Object.keys(body.filter).length ? (body.filter as never) : null,
          disabled_at: body.disabled_at ?? null,
        });
        reply.status(201);
        return destinationView(created);
      },
    );

    app.get('/destinations/:destination_id', async (req: TenantReq) => {
      const tenantId = await existingTenant(req);
      const d = await ctx.destinations.get(tenantId, req.params.destination_id ?? '');
      if (!d) throw new AppError('DESTINATION_NOT_FOUND');
      return destinationView(d);
    });

    app.get('/destinations/:destination_id/attempts', async (req: TenantReq) => {
      const tenantId = await existingTenant(req);
      const destinationId = req.params.destination_id ?? '';
      if (!(await ctx.destinations.get(tenantId, destinationId))) throw new AppError('DESTINATION_NOT_FOUND');
      const models = await ctx.attempts.listByDestination(tenantId, destinationId, 100);
      return { models, pagination: { order_by: 'time', dir: 'desc', limit: 100, next: null, prev: null } };
    });
  };
}
