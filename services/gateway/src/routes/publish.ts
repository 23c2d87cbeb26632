import type { FastifyInstance } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import { newId } from '@switchyard/shared/ids.ts';
import { TOPIC } from '@switchyard/shared/kafka/topics.ts';
import type { EventRecord, JsonObject } from '@switchyard/shared/model/index.ts';
import { matchesFilter, matchesTopic } from '@switchyard/shared/routing/match.ts';
import { requireTenantAccess } from '../auth.ts';
import type { Ctx } from '../app.ts';

export const publishBodySchema = {
  type: 'object',
  required: ['tenant_id', 'topic', 'data'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 255 },
    tenant_id: { type: 'string', minLength: 1, maxLength: 255 },
    topic: { type: 'string', minLength: 1, maxLength: 255 },
    destination_id: { type: 'string', minLength: 1, maxLength: 255 },
    eligible_for_retry: { type: 'boolean', default: true },
    time: { type: 'string', format: 'date-time' },
    metadata: { type: ['object', 'null'], additionalProperties: { type: ['string', 'number', 'boolean'] } },
    data: { type: 'object' },
  },
} as const;

interface PublishBody {
  id?: string;
  tenant_id: string;
  topic: string;
  destination_id?: string;
  eligible_for_retry: boolean;
  time?: string;
  metadata?: Record<string, string | number | boolean> | null;
  data: JsonObject;
}

export function publishRoutes(ctx: Ctx) {
  return async (app: FastifyInstance) => {
    app.post<{ Body: PublishBody }>('/publish', { schema: { body: publishBodySchema } }, async (req, reply) => {
      const started = performance.now();
      const body = req.body;
      requireTenantAccess(req.principal, body.tenant_id);
      const allowed = ctx.config.TOPICS;
      if (!allowed.includes('*') && !allowed.includes(body.topic)) {
        throw AppError.validation([{ path: 'body.topic', message: `"${body.topic}" is not a configured topic` }]);
      }
      if (!(await ctx.tenants.exists(body.tenant_id))) throw new AppError('TENANT_NOT_FOUND');

      const event: EventRecord = {
        id: body.id ?? newId(),
        tenant_id: body.tenant_id,
        topic: body.topic,
        time: body.time ? new Date(body.time).toISOString() : new Date().toISOString(),
        eligible_for_retry: body.eligible_for_retry,
        metadata: body.metadata ?? null,
        data: body.data,
        destination_id: body.destination_id ?? null,
      };
      const destinations = (await ctx.destinations.list(event.tenant_id)).filter(
        (d) =>
          d.disabled_at === null &&
          (event.destination_id ? d.id === event.destination_id : matchesTopic(d.topics, event.topic) && matchesFilter(d.filter, event)),
      );
      await ctx.producer.send(TOPIC.events, [{ key: event.tenant_id, value: event }]);
      req.log.info(
        {
          msg: 'publish',
          event_id: event.id,
          tenant_id: event.tenant_id,
          topic: event.topic,
          destinations: destinations.length,
          duration_ms: Math.round(performance.now() - started),
        },
        'publish',
      );
      reply.status(202);
      return { id: event.id, duplicate: false, destination_ids: destinations.map((d) => d.id) };
    });
  };
}
