import type { FastifyInstance } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import { canonicalType, REGISTRY, typeSchema } from '@switchyard/shared/destinations/registry.ts';
import { answers } from '../openapi.ts';
import { existingTenant, type TenantReq } from './common.ts';
import type { TenantCheck } from './deps.ts';

/** Destination type schemas and topics: the same registry data that validates destinations. */
export interface SchemaRouteDeps {
  /** TOPICS, answered by GET /topics. */
  topics: readonly string[];
  tenants: TenantCheck;
}

export function schemaRoutes(deps: SchemaRouteDeps) {
  return async (app: FastifyInstance) => {
    const tags = ['schemas'];
    const all = Object.values(REGISTRY).map(typeSchema);
    // The same answer under a tenant's path, as any tenant route: its tenant must exist and be the token's.
    const tenantChecked = async (req: TenantReq) => {
      if (req.params.tenant_id !== undefined) await existingTenant(deps.tenants, req);
    };
    // Both path forms of a tenant's routes, and none (contract-details: both forms work everywhere).
    for (const prefix of ['', '/:tenant_id', '/tenants/:tenant_id']) {
      app.get(
        `${prefix}/destination-types`,
        { schema: { tags, summary: 'Every destination type schema', response: answers({ 200: 'DestinationTypeSchemaList' }) } },
        async (req: TenantReq) => {
          await tenantChecked(req);
          return all;
        },
      );
      app.get<{ Params: { type: string; tenant_id?: string } }>(
        `${prefix}/destination-types/:type`,
        {
          schema: { tags, summary: 'One destination type schema (aliases accepted)', response: answers({ 200: 'DestinationTypeSchema' }) },
        },
        async (req) => {
          await tenantChecked(req as TenantReq);
          const type = canonicalType(req.params.type);
          if (!type) throw new AppError('DESTINATION_TYPE_NOT_FOUND');
          return typeSchema(REGISTRY[type]);
        },
      );
    }
    app.get('/topics', { schema: { tags, summary: 'The configured topics', response: answers({ 200: 'Topics' }) } }, async () => [
      ...deps.topics,
    ]);
  };
}
