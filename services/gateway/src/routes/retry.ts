import type { FastifyInstance } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import type { BusProducer } from '@switchyard/shared/bus/index.ts';
import type { Knex } from '@switchyard/shared/db/index.ts';
import type { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { idParam, type TenantReq } from './common.ts';
import { answers, ref } from '../openapi.ts';
import { storedEvent } from '../stored-event.ts';
import { readEvent } from './events.ts';

export const retryBody = {
  type: 'object',
  required: ['event_id', 'destination_id'],
  additionalProperties: false,
  properties: {
    event_id: idParam,
    destination_id: idParam,
    tenant_id: { ...idParam, description: 'With the admin key, when several tenants have this event id.' },
  },
} as const;

/**
 * Manual retry: a new attempt of one event to one destination, with manual: true and the next
 * attempt number. It goes through the destination's delivery topic like any delivery.
 */
export interface RetryRouteDeps {
  /** Reads the event and its last attempt number. */
  db: Knex;
  destinations: Pick<DestinationStore, 'routable'>;
  producer: BusProducer;
}

export function retryRoutes(deps: RetryRouteDeps) {
  /** Of several tenants' events with one id, the one whose tenant has the destination: refused unless exactly one does. */
  async function ownerOf(rows: Array<Record<string, unknown>>, destinationId: string) {
    const owners = (await deps
      .db('destinations')
      .whereIn(
        'tenant_id',
        rows.map((r) => String(r.tenant_id)),
      )
      .andWhere({ id: destinationId })
      .pluck('tenant_id')) as string[];
    if (owners.length === 0) throw new AppError('DESTINATION_NOT_FOUND');
    if (owners.length > 1)
      throw AppError.validation([
        { path: 'body.tenant_id', message: 'is required: several tenants have this event id and this destination' },
      ]);
    return rows.find((r) => r.tenant_id === owners[0]);
  }

  async function retry(tenantId: string | undefined, eventId: string, destinationId: string, principal: TenantReq['principal']) {
    const scope = principal.kind === 'tenant' ? principal.tenantId : tenantId;
    if (principal.kind === 'tenant' && tenantId && tenantId !== principal.tenantId)
      throw new AppError('FORBIDDEN', 'The token does not grant access to this tenant.');
    // A tenant named that does not exist is said at once, not after waiting for its event.
    if (scope && !(await deps.db('tenants').where({ id: scope }).first('id'))) throw new AppError('TENANT_NOT_FOUND');
    const read = async () => {
      const q = deps.db('events').where({ id: eventId });
      if (scope) q.andWhere({ tenant_id: scope });
      const found = (await q.limit(scope ? 1 : 100)) as Array<Record<string, unknown>>;
      return found.length ? found : null;
    };
    // Right after publish's 202 the event may not be stored yet: wait for it, as a GET of it does.
    const rows = (await readEvent(deps.db, scope ? [scope] : null, eventId, read)) ?? [];
    if (rows.length === 0) throw new AppError('EVENT_NOT_FOUND');
    const row = rows.find((r) => r.tenant_id === scope) ?? (rows.length === 1 ? rows[0] : await ownerOf(rows, destinationId));
    if (!row) throw new AppError('EVENT_NOT_FOUND');
    const tenant = String(row.tenant_id);
    const destination = await deps.destinations.routable(tenant, destinationId);
    if (!destination) throw new AppError('DESTINATION_NOT_FOUND');
    if (destination.disabled_at) throw new AppError('DESTINATION_DISABLED', 'The destination is disabled; enable it before retrying.');
    const last = (await deps
      .db('attempts')
      .where({ tenant_id: tenant, event_id: eventId, destination_id: destinationId })
      .max({ n: 'attempt_number' })
      .first()) as { n: number | null } | undefined;
    const event = storedEvent(row);
    await deps.producer.send(TOPIC.deliveries[destination.snapshot.type], [
      {
        key: destination.id,
        value: { event, destination: destination.snapshot, attempt_number: (last?.n ?? 0) + 1, manual: true },
      },
    ]);
    return { success: true };
  }

  return async (app: FastifyInstance) => {
    app.post<{ Body: { event_id: string; destination_id: string; tenant_id?: string } }>(
      '/api/v1/retry',
      {
        schema: {
          tags: ['attempts'],
          summary: 'Retry one event to one destination (a manual attempt); 202',
          body: ref('RetryRequest'),
          response: answers({ 202: 'Success' }),
        },
      },
      async (req, reply) => {
        const result = await retry(req.body.tenant_id, req.body.event_id, req.body.destination_id, req.principal);
        reply.status(202);
        return result;
      },
    );
    for (const prefix of ['/api/v1/:tenant_id', '/api/v1/tenants/:tenant_id', '/api/v1']) {
      app.post<{ Params: { tenant_id?: string; destination_id: string; event_id: string } }>(
        `${prefix}/destination/:destination_id/events/:event_id/retry`,
        {
          schema: { tags: ['attempts'], summary: 'Retry one event to one destination (first form)', response: answers({ 202: 'Success' }) },
        },
        async (req, reply) => {
          const result = await retry(req.params.tenant_id, req.params.event_id, req.params.destination_id, req.principal);
          reply.status(202);
          return result;
        },
      );
    }
  };
}
