import type { FastifyInstance } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import { canonicalType, REGISTRY, typeSchema } from '@switchyard/shared/destinations/registry.ts';
import { answers } from '../openapi.ts';

/** Destination type schemas and topics: the same registry data that validates destinations. */
export interface SchemaRouteDeps {
  /** TOPICS, answered by GET /topics. */
  topics: readonly string[];
}

export function schemaRoutes(deps: SchemaRouteDeps) {
  return async (app: FastifyInstance) => {
    const tags = ['schemas'];
    const all = Object.values(REGISTRY).map(typeSchema);
    for (const prefix of ['', '/:tenant_id']) {
      app.get(
        `${prefix}/destination-types`,
        { schema: { tags, summary: 'Every destination type schema', response: answers({ 200: 'DestinationTypeSchemaList' }) } },
        async () => all,
      );
      app.get<{ Params: { type: string } }>(
        `${prefix}/destination-types/:type`,
        {
          schema: { tags, summary: 'One destination type schema (aliases accepted)', response: answers({ 200: 'DestinationTypeSchema' }) },
        },
        async (req) => {
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
