import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import { QueryStore } from '@switchyard/shared/db/stores/queries.ts';
import type { Ctx } from '../app.ts';
import { createPendingReasons } from '../pending-reason.ts';
import {
  documentedOnly,
  manyQueryDocs,
  Problems,
  pageQueryDocs,
  parsePage,
  parseStatuses,
  parseTime,
  type Query,
  readableTenants,
  statusQueryDocs,
  timeQueryDocs,
} from './attempts.ts';
import { existingDestination, idParam, multi, type TenantReq } from './common.ts';

const eventListQuery = {
  type: 'object',
  properties: {
    destination_id: manyQueryDocs('Events routed to these destinations.'),
    status: {
      ...statusQueryDocs,
      description: `Events with a delivery (to the destinations given) in this state. ${statusQueryDocs.description}`,
    },
    topic: manyQueryDocs('Events of these topics.'),
    tenant_id: manyQueryDocs('Admin key only, without a tenant in the path: events of these tenants.'),
    ...timeQueryDocs,
    ...pageQueryDocs,
  },
} as const;

const destinationEventListQuery = {
  type: 'object',
  properties: {
    status: {
      ...statusQueryDocs,
      description: `Events whose delivery to this destination is in this state. ${statusQueryDocs.description}`,
    },
    topic: manyQueryDocs('Events of these topics.'),
    ...timeQueryDocs,
    ...pageQueryDocs,
  },
} as const;

type Req = FastifyRequest<{ Params: { tenant_id?: string; destination_id?: string; event_id?: string }; Querystring: Query }>;

export function eventRoutes(ctx: Ctx) {
  const queries = new QueryStore(ctx.db, ctx.config.API_PAGE_MAX_BYTES);
  // A pending delivery of a type no sender runs says so (pending-reason.ts); only then is the type read.
  const pendingReasons = createPendingReasons(ctx.db);
  const typeOf = async (tenantId: string, destinationId: string) =>
    (await ctx.db('destinations').where({ tenant_id: tenantId, id: destinationId }).first('type'))?.type as string | undefined;

  function listParams(q: Query) {
    const p = new Problems();
    const page = parsePage(q, p, 'evt');
    const time = parseTime(q, p);
    const statuses = parseStatuses(q, p);
    p.throwIfAny();
    return { page, time, statuses, topics: multi(q, 'topic') };
  }

  return async (app: FastifyInstance) => {
    app.get(
      '/events',
      {
        ...documentedOnly,
        schema: {
          tags: ['events'],
          summary:
            'List events, newest event time first, cursor-paged: of the tenant in the path or token, or (admin key, no tenant in the path) of every tenant',
          params: { type: 'object', properties: { tenant_id: idParam } },
          querystring: eventListQuery,
        },
      },
      async (req: Req) => {
        const { page, ...f } = listParams(req.query);
        const tenants = await readableTenants(ctx, req);
        return queries.listEvents({ ...f, tenants, destinationIds: multi(req.query, 'destination_id') }, page);
      },
    );

    app.get(
      '/events/:event_id',
      {
        ...documentedOnly,
        schema: {
          tags: ['events'],
          summary: 'Get one event with its data',
          params: { type: 'object', properties: { tenant_id: idParam, event_id: idParam } },
          querystring: {
            type: 'object',
            properties: { tenant_id: manyQueryDocs('Admin key only, without a tenant in the path: the event of these tenants.') },
          },
        },
      },
      async (req: Req) => {
        const event = await queries.getEvent(await readableTenants(ctx, req), req.params.event_id ?? '');
        if (!event) throw new AppError('EVENT_NOT_FOUND');
        return event;
      },
    );

    app.get(
      '/events/:event_id/deliveries',
      {
        ...documentedOnly,
        schema: {
          tags: ['events'],
          summary: 'Every delivery attempt of an event, newest first (an array; at most 1000)',
          params: { type: 'object', properties: { tenant_id: idParam, event_id: idParam } },
          querystring: {
            type: 'object',
            properties: {
              destination_id: manyQueryDocs('Only attempts to these destinations.'),
              tenant_id: manyQueryDocs('Admin key only, without a tenant in the path: the event of these tenants.'),
            },
          },
        },
      },
      async (req: Req) => {
        const attempts = await queries.eventAttempts(
          await readableTenants(ctx, req),
          req.params.event_id ?? '',
          multi(req.query, 'destination_id'),
        );
        if (!attempts) throw new AppError('EVENT_NOT_FOUND');
        return attempts.map((a) => ({ delivered_at: a.time, ...a }));
      },
    );

    app.get(
      '/destination/:destination_id/events',
      {
        ...documentedOnly,
        schema: {
          tags: ['events'],
          summary: "List the events routed to a destination with that delivery's status, newest event time first, cursor-paged",
          params: { type: 'object', properties: { tenant_id: idParam, destination_id: idParam } },
          querystring: destinationEventListQuery,
        },
      },
      async (req: Req) => {
        const { page, ...f } = listParams(req.query);
        const { tenantId, destinationId } = await existingDestination(queries, req as unknown as TenantReq);
        const listed = await queries.listEvents({ ...f, tenants: [tenantId], destinationIds: [destinationId] }, page, {
          scopedDestination: destinationId,
        });
        return { ...listed, models: await pendingReasons(() => typeOf(tenantId, destinationId), listed.models) };
      },
    );

    app.get(
      '/destination/:destination_id/events/:event_id',
      {
        ...documentedOnly,
        schema: {
          tags: ['events'],
          summary: 'Get one event routed to a destination, as an array holding the event',
          params: { type: 'object', properties: { tenant_id: idParam, destination_id: idParam, event_id: idParam } },
        },
      },
      async (req: Req) => {
        const { tenantId, destinationId } = await existingDestination(queries, req as unknown as TenantReq);
        const event = await queries.getEvent([tenantId], req.params.event_id ?? '', destinationId);
        if (!event) throw new AppError('EVENT_NOT_FOUND');
        return pendingReasons(() => typeOf(tenantId, destinationId), [event]);
      },
    );
  };
}
