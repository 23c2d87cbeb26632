import type { FastifyInstance } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import { canonicalType, REGISTRY, typeSchema } from '@switchyard/shared/destinations/registry.ts';
import type { Ctx } from '../app.ts';

const fieldSchema = {
  type: 'object',
  properties: {
    key: { type: 'string' },
    type: { type: 'string', enum: ['text', 'checkbox', 'key_value_map', 'select'] },
    label: { type: 'string' },
    description: { type: 'string' },
    required: { type: 'boolean' },
    sensitive: { type: 'boolean' },
    default: { type: 'string' },
    minlength: { type: 'integer' },
    maxlength: { type: 'integer' },
    pattern: { type: 'string' },
    validation: { type: 'string' },
    options: { type: 'array', items: { type: 'object', properties: { label: { type: 'string' }, value: { type: 'string' } } } },
  },
} as const;

export const typeSchemaResponse = {
  type: 'object',
  properties: {
    type: { type: 'string' },
    label: { type: 'string' },
    description: { type: 'string' },
    icon: { type: 'string' },
    instructions: { type: 'string' },
    remote_setup_url: { type: 'string' },
    config_fields: { type: 'array', items: fieldSchema },
    credential_fields: { type: 'array', items: fieldSchema },
  },
} as const;

/** Destination type schemas and topics: the same registry data that validates destinations. */
export function schemaRoutes(ctx: Ctx) {
  return async (app: FastifyInstance) => {
    const tags = ['schemas'];
    const all = Object.values(REGISTRY).map(typeSchema);
    for (const prefix of ['', '/:tenant_id']) {
      app.get(
        `${prefix}/destination-types`,
        { schema: { tags, summary: 'Every destination type schema', response: { 200: { type: 'array', items: typeSchemaResponse } } } },
        async () => all,
      );
      app.get<{ Params: { type: string } }>(
        `${prefix}/destination-types/:type`,
        { schema: { tags, summary: 'One destination type schema', response: { 200: typeSchemaResponse } } },
        async (req) => {
          const type = canonicalType(req.params.type);
          if (!type) throw new AppError('DESTINATION_TYPE_NOT_FOUND');
          return typeSchema(REGISTRY[type]);
        },
      );
    }
    app.get(
      '/topics',
      { schema: { tags, summary: 'The configured topics', response: { 200: { type: 'array', items: { type: 'string' } } } } },
      async () => [...ctx.config.TOPICS],
    );
  };
}
