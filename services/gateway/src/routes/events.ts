import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import type { Knex } from '@switchyard/shared/db/index.ts';
import type { QueryStore } from '../queries/store.ts';
import { EVENT_STATUSES, type Tenants } from '../queries/views.ts';
import type { TenantCheck } from './deps.ts';
import { createPendingReasons } from '../pending-reason.ts';
import {
  documentedOnly,
  manyQueryDocs,
  Problems,
  pageQueryDocs,
  parseIds,
  parsePage,
  parseStatuses,
  parseTime,
  type Query,
  readableTenants,
  timeQueryDocs,
} from './attempts.ts';
import { existingDestination, idParam, multi, type TenantReq } from './common.ts';
import { answers } from '../openapi.ts';

const statusQueryDocs = manyQueryDocs(
  'success, failed or canceled; scheduled: pending and not due yet (an event published with deliver_at or delay_seconds).',
  EVENT_STATUSES,
);

const eventListQuery = {
  type: 'object',
  properties: {
    id: manyQueryDocs('These events, by id.'),
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

/** How long a read waits for an event that may still be on its way to the events table. */
export const EVENT_READ_WAIT_MS = 10_000;
/** An event id generated or reserved this recently may be accepted and not yet stored. */
const IN_FLIGHT_MS = 60_000;
const UUIDV7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/**
 * Whether an event not found may have been accepted (202) and not stored yet: the gateway answers
 * publish once the event is in the log, and the attempts service stores it a batch later. Ids the
 * gateway generated carry their time (UUIDv7); caller-chosen ids were reserved in event_ids first.
 */
async function mayBeInFlight(db: Knex, tenants: Tenants, eventId: string): Promise<boolean> {
  const m = UUIDV7.exec(eventId);
  if (m) {
    const age = Date.now() - Number.parseInt(`${m[1]}${m[2]}`, 16);
    if (age > -IN_FLIGHT_MS && age < IN_FLIGHT_MS) return true;
  }
  const q = db('event_ids')
    .where({ id: eventId })
    .andWhere('reserved_at', '>', new Date(Date.now() - IN_FLIGHT_MS));
  if (tenants) q.whereIn('tenant_id', [...tenants]);
  return (await q.first('id')) !== undefined;
}

/**
 * Read-your-write for single-event reads in both modes, with nothing added to publish: a read of an
 * event that is not stored but may be in flight polls until it is (or EVENT_READ_WAIT_MS passes),
 * so `GET /events/{id}` right after publish's 202 answers the event rather than 404.
 */
export async function readEvent<T>(db: Knex, tenants: Tenants, eventId: string, read: () => Promise<T | null>): Promise<T | null> {
  const found = await read();
  if (found !== null || !(await mayBeInFlight(db, tenants, eventId))) return found;
  const deadline = Date.now() + EVENT_READ_WAIT_MS;
  for (let pause = 10; Date.now() < deadline; pause = Math.min(pause * 2, 200)) {
    await new Promise((r) => setTimeout(r, pause));
    const again = await read();
    if (again !== null) return again;
  }
  return null;
}

type Req = FastifyRequest<{ Params: { tenant_id?: string; destination_id?: string; event_id?: string }; Querystring: Query }>;

export interface EventRouteDeps {
  tenants: TenantCheck;
  queries: QueryStore;
  /** Reads event ids in flight, pending reasons and a destination's type. */
  db: Knex;
}

/**
 * The filters and page of an event listing; 422 naming every bad parameter. A listing not scoped to
 * one destination also filters by event id.
 */
function listParams(q: Query, scope: 'destination' | 'tenant') {
  const p = new Problems();
  const page = parsePage(q, p, 'evt');
  const time = parseTime(q, p);
  const statuses = parseStatuses(q, p, EVENT_STATUSES);
  const ids = scope === 'tenant' ? parseIds(q, 'id', p) : undefined;
  p.throwIfAny();
  return { page, time, statuses, ids, topics: multi(q, 'topic') };
}

/** The events of the tenant in the path or token (or, admin key, of every tenant): listed, one, its deliveries. */
function tenantEventRoutes(app: FastifyInstance, deps: EventRouteDeps) {
  const { queries, db } = deps;
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
        response: answers({ 200: 'EventPage' }),
      },
    },
    async (req: Req) => {
      const { page, ...f } = listParams(req.query, 'tenant');
      const tenants = await readableTenants(deps.tenants, req);
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
        response: answers({ 200: 'Event' }),
      },
    },
    async (req: Req) => {
      const tenants = await readableTenants(deps.tenants, req);
      const eventId = req.params.event_id ?? '';
      const event = await readEvent(db, tenants, eventId, () => queries.getEvent(tenants, eventId));
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
        response: answers({ 200: 'EventDeliveryList' }),
      },
    },
    async (req: Req) => {
      const tenants = await readableTenants(deps.tenants, req);
      const eventId = req.params.event_id ?? '';
      const attempts = await readEvent(db, tenants, eventId, () =>
        queries.eventAttempts(tenants, eventId, multi(req.query, 'destination_id')),
      );
      if (!attempts) throw new AppError('EVENT_NOT_FOUND');
      return attempts.map((a) => ({ delivered_at: a.time, ...a }));
    },
  );
}

/**
 * The events routed to one destination, with that delivery's status; a pending delivery of a type
 * no sender runs says so (pending-reason.ts), and only then is the destination's type read.
 */
function destinationEventRoutes(app: FastifyInstance, deps: EventRouteDeps) {
  const { queries, db } = deps;
  const pendingReasons = createPendingReasons(db);
  const typeOf = async (tenantId: string, destinationId: string) =>
    (await db('destinations').where({ tenant_id: tenantId, id: destinationId }).first('type'))?.type as string | undefined;
  app.get(
    '/destination/:destination_id/events',
    {
      ...documentedOnly,
      schema: {
        tags: ['events'],
        summary: "List the events routed to a destination with that delivery's status, newest event time first, cursor-paged",
        params: { type: 'object', properties: { tenant_id: idParam, destination_id: idParam } },
        querystring: destinationEventListQuery,
        response: answers({ 200: 'EventPage' }),
      },
    },
    async (req: Req) => {
      const { page, ...f } = listParams(req.query, 'destination');
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
        response: answers({ 200: 'EventInArray' }),
      },
    },
    async (req: Req) => {
      const { tenantId, destinationId } = await existingDestination(queries, req as unknown as TenantReq);
      const eventId = req.params.event_id ?? '';
      const event = await readEvent(db, [tenantId], eventId, () => queries.getEvent([tenantId], eventId, destinationId));
      if (!event) throw new AppError('EVENT_NOT_FOUND');
      return pendingReasons(() => typeOf(tenantId, destinationId), [event]);
    },
  );
}

export function eventRoutes(deps: EventRouteDeps) {
  return async (app: FastifyInstance) => {
    tenantEventRoutes(app, deps);
    destinationEventRoutes(app, deps);
  };
}
