import { checkedInstant } from '@switchyard/shared/time.ts';
import type { FastifyInstance } from 'fastify';
import { AppError, type Problem } from '@switchyard/shared/errors.ts';
import { ID_PATTERN } from '@switchyard/shared/events/storable.ts';
import { newId } from '@switchyard/shared/ids.ts';
import { mergePatch } from '../merge-patch.ts';
import { DESTINATION_TYPES, type Destination, type DestinationType, type JsonObject } from '@switchyard/shared/model/index.ts';
import { canonicalType, INPUT_TYPE_NAMES, REGISTRY, TYPE_ALIASES } from '@switchyard/shared/destinations/registry.ts';
import type { Config } from '@switchyard/shared/config/index.ts';
import type { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import type { Announce } from '../destination-changes.ts';
import type { Principal } from '../auth.ts';
import type { TenantCheck } from './deps.ts';
import {
  checkCredentialRights,
  checkDeliveryMetadata,
  checkDestination,
  checkWriteOnly,
  fail,
  initialCredentials,
  normalizeTopics,
  patchedCredentials,
} from '../destination-input.ts';
import { destinationView } from '../destination-view.ts';
import { existingTenant, idParam, multi, stringMap, stringMapPatch, type TenantReq } from './common.ts';
import { verifyGatewayToken } from '../gateway-token.ts';
import { namesFor, type TypeNames } from '../type-names.ts';
import type { ValidateRules } from '@switchyard/shared/destinations/types/def.ts';
import { documentedOnly, manyQueryDocs } from './attempts.ts';
import { answers, ref } from '../openapi.ts';
import { orderedSchema, rateLimitSchema } from '@switchyard/shared/destinations/controls.ts';
import type { Knex } from '@switchyard/shared/db/index.ts';
import type { RateLimit } from '@switchyard/shared/model/index.ts';

const topicsSchema = {
  anyOf: [
    { type: 'string', const: '*' },
    { type: 'array', items: { type: 'string', minLength: 1, maxLength: 255 }, minItems: 1 },
  ],
} as const;
// Free-form objects say so (additionalProperties: true): generated clients type them as records.
const objectOrNull = { type: ['object', 'null'], additionalProperties: true } as const;
const typeInput = {
  type: 'string',
  enum: INPUT_TYPE_NAMES,
  description: `One of ${DESTINATION_TYPES.join(', ')}; the aliases ${Object.keys(TYPE_ALIASES).join(', ')} are accepted as input and answered with the type they name.`,
} as const;

export const createBody = {
  type: 'object',
  required: ['type', 'topics'],
  additionalProperties: false,
  properties: {
    // Empty: one is generated.
    id: { type: 'string', maxLength: 255, pattern: `^$|${ID_PATTERN}` },
    type: typeInput,
    topics: topicsSchema,
    config: { type: 'object', additionalProperties: true },
    credentials: objectOrNull,
    filter: objectOrNull,
    delivery_metadata: stringMap,
    metadata: stringMap,
    disabled_at: { type: ['string', 'null'], format: 'date-time' },
    rate_limit: rateLimitSchema,
    ordered: orderedSchema,
  },
} as const;

export const patchBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: typeInput,
    topics: topicsSchema,
    config: objectOrNull,
    credentials: objectOrNull,
    filter: objectOrNull,
    delivery_metadata: stringMapPatch,
    metadata: stringMapPatch,
    // Replaced whole; null removes it.
    rate_limit: rateLimitSchema,
    ordered: orderedSchema,
  },
} as const;

interface CreateBody {
  id?: string;
  type: DestinationType;
  topics: string | string[];
  config?: Record<string, unknown>;
  credentials?: Record<string, unknown> | null;
  filter?: JsonObject | null;
  delivery_metadata?: Record<string, string>;
  metadata?: Record<string, string>;
  disabled_at?: string | null;
  rate_limit?: RateLimit | null;
  ordered?: boolean | null;
}

interface PatchBody {
  type?: DestinationType;
  topics?: string | string[];
  config?: Record<string, unknown> | null;
  credentials?: Record<string, unknown> | null;
  filter?: JsonObject | null;
  delivery_metadata?: Record<string, string | null> | null;
  metadata?: Record<string, string | null> | null;
  rate_limit?: RateLimit | null;
  ordered?: boolean | null;
}

const destParams = { type: 'object', properties: { tenant_id: idParam, destination_id: idParam } } as const;
const tags = ['destinations'];

export interface DestinationRouteDeps {
  tenants: TenantCheck;
  destinations: Pick<DestinationStore, 'get' | 'list' | 'createWithin' | 'update' | 'delete'>;
  /** Tells the senders a destination changed (after it is stored). */
  announce: Announce;
  /** The settings a destination is checked against. */
  config: Pick<Config, 'WEBHOOK_HEADER_PREFIX' | 'API_TYPE_NAMES' | 'TOPICS' | 'EVENT_GATEWAY_VERIFY_URL' | 'MAX_DESTINATIONS_PER_TENANT'>;
  /** Reads `ordered_blocks`, which the senders write (GET .../order). */
  db: Knex;
}

const orNullIfEmpty = <T extends object>(v: T | null | undefined): T | null => (v && Object.keys(v).length ? v : null);

/** The tenant's destination of params.destination_id; 404 when the tenant or it does not exist. */
async function load(deps: DestinationRouteDeps, req: TenantReq) {
  const tenantId = await existingTenant(deps.tenants, req);
  const d = await deps.destinations.get(tenantId, req.params.destination_id ?? '');
  if (!d) throw new AppError('DESTINATION_NOT_FOUND');
  return d;
}

/** How this request's destination is read: as the other service reads it for its clients (API_TYPE_NAMES). */
const rulesFor = (deps: DestinationRouteDeps, userAgent: string | undefined): ValidateRules => ({
  peerCompatible: namesFor(deps.config.API_TYPE_NAMES as TypeNames, userAgent) === 'outpost',
});

/** Checks a destination's config, credentials, filter, delivery metadata and topics, into `problems`. */
function checkInput(
  deps: DestinationRouteDeps,
  type: DestinationType,
  input: { config: Record<string, unknown>; credentials: Record<string, unknown>; filter: JsonObject | null },
  body: { delivery_metadata?: Record<string, string | null> | null | undefined; topics?: string | string[] | undefined },
  problems: Problem[],
  rules: ValidateRules,
): string[] | undefined {
  checkDestination(type, input, problems, deps.config.WEBHOOK_HEADER_PREFIX, rules);
  checkDeliveryMetadata(body.delivery_metadata, problems);
  return body.topics === undefined ? undefined : normalizeTopics(body.topics, deps.config.TOPICS, problems);
}

/** Checked with the event gateway when EVENT_GATEWAY_VERIFY_URL is set; only once the rest is valid. */
async function verifyToken(deps: DestinationRouteDeps, token: unknown) {
  fail([await verifyGatewayToken(deps.config.EVENT_GATEWAY_VERIFY_URL, token)].filter((p) => p !== null));
}

/** POST /destinations: validates and stores a new destination, then announces it. */
async function createDestination(
  deps: DestinationRouteDeps,
  tenantId: string,
  req: CreateBody,
  principal: Principal,
  rules: ValidateRules,
) {
  const body = { ...req, type: canonicalType(req.type) as DestinationType };
  const def = REGISTRY[body.type];
  const problems: Problem[] = [];
  if (body.config === undefined && !def.configOptional) problems.push({ path: 'body.config', message: 'is required' });
  if ((body.credentials === undefined || body.credentials === null) && !def.credentialsOptional) {
    problems.push({ path: 'body.credentials', message: 'is required' });
  }
  checkCredentialRights(body.type, body.credentials, principal, problems);
  checkWriteOnly(body.type, body.credentials, problems);
  const config = body.config ?? {};
  const credentials = initialCredentials(body.type, body.credentials ?? {}, new Date());
  const filter = orNullIfEmpty(body.filter);
  const topics = checkInput(deps, body.type, { config, credentials, filter }, body, problems, rules) as string[];
  fail(problems);
  if (body.type === 'gateway') await verifyToken(deps, credentials.token);
  const max = deps.config.MAX_DESTINATIONS_PER_TENANT;
  const id = body.id || newId();
  const created = await deps.destinations.createWithin(
    {
      id,
      tenant_id: tenantId,
      type: body.type,
      topics,
      config,
      credentials,
      delivery_metadata: orNullIfEmpty(body.delivery_metadata),
      metadata: orNullIfEmpty(body.metadata),
      filter,
      // In UTC: Postgres takes offsets only to ±15:59.
      disabled_at: body.disabled_at ? checkedInstant(body.disabled_at).toISOString() : null,
      rate_limit: body.rate_limit ?? null,
      ordered: body.ordered ?? false,
    },
    max,
  );
  if (created === 'limit') throw new AppError('DESTINATION_LIMIT_REACHED', `A tenant may have at most ${max} destinations.`);
  if (created === 'exists') throw new AppError('DESTINATION_EXISTS');
  // Deleted since it was checked at the start of the request.
  if (created === 'no-tenant') throw new AppError('TENANT_NOT_FOUND');
  // A destination deleted and created again under its id must not stay canceled in a sender.
  await deps.announce({ tenant_id: tenantId, destination_id: id, change: 'created' });
  return created;
}

/** PATCH /destinations/{id}: merges the patch into the stored destination, checks and stores it, announces it. */
async function patchDestination(
  deps: DestinationRouteDeps,
  existing: Destination,
  body: PatchBody,
  principal: Principal,
  rules: ValidateRules,
) {
  const problems: Problem[] = [];
  if (body.type !== undefined && canonicalType(body.type) !== existing.type)
    problems.push({ path: 'body.type', message: 'cannot be changed' });
  checkCredentialRights(existing.type, body.credentials, principal, problems);
  checkWriteOnly(existing.type, body.credentials, problems);
  // RFC 7396 at the body's root: a member set to null is removed. A removed config is {} (its
  // required fields are then reported); credentials null changes nothing (interface.md lets a
  // patch send it, and removing them would drop or silently regenerate the signing secret).
  const config =
    body.config === undefined
      ? existing.config
      : body.config === null
        ? {}
        : (mergePatch(existing.config, body.config) as Record<string, unknown>);
  const credentials = body.credentials === undefined ? existing.credentials : patchedCredentials(existing, body.credentials, new Date());
  // The filter is replaced whole; {} or null clears it.
  const filter = body.filter === undefined ? existing.filter : orNullIfEmpty(body.filter);
  const topics = checkInput(deps, existing.type, { config, credentials, filter }, body, problems, rules) ?? existing.topics;
  fail(problems);
  if (existing.type === 'gateway' && body.credentials !== undefined && credentials.token !== existing.credentials.token) {
    await verifyToken(deps, credentials.token);
  }
  const merged = <T>(current: T | null, patch: unknown) =>
    patch === undefined ? current : patch === null ? null : orNullIfEmpty(mergePatch(current ?? {}, patch) as T & object);
  const updated = await deps.destinations.update(existing.tenant_id, existing.id, {
    topics,
    config,
    credentials,
    filter,
    metadata: merged(existing.metadata, body.metadata),
    delivery_metadata: merged(existing.delivery_metadata, body.delivery_metadata),
    ...(body.rate_limit !== undefined ? { rate_limit: body.rate_limit } : {}),
    ...(body.ordered !== undefined ? { ordered: body.ordered ?? false } : {}),
  });
  if (!updated) throw new AppError('DESTINATION_NOT_FOUND');
  await deps.announce({ tenant_id: updated.tenant_id, destination_id: updated.id, change: 'updated' });
  return updated;
}

/** GET /destinations: the tenant's destinations, filtered by type and topics. */
function listRoute(app: FastifyInstance, deps: DestinationRouteDeps) {
  app.get<{ Querystring: Record<string, unknown> }>(
    '/destinations',
    {
      ...documentedOnly,
      schema: {
        tags,
        summary: 'List destinations (not paged); filter by type and topics',
        querystring: {
          type: 'object',
          additionalProperties: true,
          properties: {
            type: manyQueryDocs('Destinations of these types (aliases accepted).', INPUT_TYPE_NAMES),
            topics: manyQueryDocs('Destinations subscribed to any of these topics.'),
          },
        },
        response: answers({ 200: 'DestinationList' }),
      },
    },
    async (req) => {
      const tenantId = await existingTenant(deps.tenants, req as unknown as TenantReq);
      const problems: Problem[] = [];
      const type = multi(req.query, 'type')?.map((t) => {
        const canonical = canonicalType(t);
        if (!canonical) problems.push({ path: 'query.type', message: `"${t}" is not a destination type` });
        return canonical ?? t;
      });
      fail(problems);
      const topics = multi(req.query, 'topics');
      return (await deps.destinations.list(tenantId, { ...(type ? { type } : {}), ...(topics ? { topics } : {}) })).map((d) =>
        destinationView(d),
      );
    },
  );
}

/** POST, PATCH and DELETE of one destination. */
function writeRoutes(app: FastifyInstance, deps: DestinationRouteDeps) {
  app.post<{ Body: CreateBody }>(
    '/destinations',
    {
      schema: { tags, summary: 'Create a destination', body: ref('DestinationCreate'), response: answers({ 201: 'Destination' }, [409]) },
    },
    async (req, reply) => {
      const tenantId = await existingTenant(deps.tenants, req as unknown as TenantReq);
      const created = await createDestination(deps, tenantId, req.body, req.principal, rulesFor(deps, req.headers['user-agent']));
      reply.status(201);
      return destinationView(created);
    },
  );

  app.patch<{ Body: PatchBody }>(
    '/destinations/:destination_id',
    {
      schema: {
        tags,
        summary: 'Update a destination (JSON Merge Patch for config, credentials, metadata, delivery_metadata; rate_limit replaced whole)',
        params: destParams,
        body: ref('DestinationUpdate'),
        response: answers({ 200: 'Destination' }),
      },
    },
    async (req) => {
      const existing = await load(deps, req as unknown as TenantReq);
      return destinationView(await patchDestination(deps, existing, req.body, req.principal, rulesFor(deps, req.headers['user-agent'])));
    },
  );

  app.delete(
    '/destinations/:destination_id',
    { schema: { tags, summary: 'Delete a destination', params: destParams, response: answers({ 200: 'Success' }) } },
    async (req: TenantReq) => {
      const d = await load(deps, req);
      await deps.destinations.delete(d.tenant_id, d.id);
      await deps.announce({ tenant_id: d.tenant_id, destination_id: d.id, change: 'deleted' });
      return { success: true };
    },
  );
}

/** GET /destinations/{id}/order: an ordered destination's blocking delivery and the deliveries waiting in its spill (services/sender/src/controls/ordered.ts). */
function orderRoute(app: FastifyInstance, deps: DestinationRouteDeps) {
  app.get(
    '/destinations/:destination_id/order',
    {
      schema: {
        tags,
        summary: 'The delivery blocking an ordered destination and how many wait behind it',
        params: destParams,
        response: answers({ 200: 'DestinationOrder' }),
      },
    },
    async (req: TenantReq) => {
      const d = await load(deps, req);
      // Read whatever `ordered` says now: a destination switched off while blocked still drains its spill in order.
      // Waiting: the spill but the blocking delivery itself; a manual retry of its event (never the
      // blocking one: manual retries are not retried) waits like any other.
      const res = await deps.db.raw(
        `SELECT b.event_id, b.attempt_number, b.next_attempt_at, b.since,
                (SELECT count(*) FROM ordered_spill s
                  WHERE s.tenant_id = ? AND s.destination_id = ?
                    AND (s.event_id IS DISTINCT FROM b.event_id OR (s.delivery::jsonb ->> 'manual') = 'true')) AS waiting
           FROM (SELECT 1) one LEFT JOIN ordered_blocks b ON b.tenant_id = ? AND b.destination_id = ?`,
        [d.tenant_id, d.id, d.tenant_id, d.id],
      );
      const row = (
        res.rows as Array<{ event_id: string | null; attempt_number: number; next_attempt_at: Date; since: Date; waiting: string | number }>
      )[0];
      const waiting = Number(row?.waiting ?? 0);
      return {
        ordered: d.ordered === true,
        blocked: row?.event_id
          ? {
              event_id: row.event_id,
              attempt_number: row.attempt_number,
              next_attempt_at: new Date(row.next_attempt_at).toISOString(),
              waiting,
              since: new Date(row.since).toISOString(),
            }
          : null,
        waiting,
      };
    },
  );
}

/** PUT /destinations/{id}/enable and /disable; a destination already so is answered as it is. */
function toggleRoutes(app: FastifyInstance, deps: DestinationRouteDeps) {
  for (const action of ['enable', 'disable'] as const) {
    app.put(
      `/destinations/:destination_id/${action}`,
      { schema: { tags, summary: `${action} a destination`, params: destParams, response: answers({ 200: 'Destination' }) } },
      async (req: TenantReq) => {
        const d = await load(deps, req);
        const wanted = action === 'enable' ? null : (d.disabled_at ?? new Date().toISOString());
        const updated = wanted === d.disabled_at ? d : await deps.destinations.update(d.tenant_id, d.id, { disabled_at: wanted });
        if (!updated) throw new AppError('DESTINATION_NOT_FOUND');
        if (updated !== d)
          await deps.announce({ tenant_id: d.tenant_id, destination_id: d.id, change: action === 'enable' ? 'enabled' : 'disabled' });
        return destinationView(updated);
      },
    );
  }
}

export function destinationRoutes(deps: DestinationRouteDeps) {
  return async (app: FastifyInstance) => {
    listRoute(app, deps);
    writeRoutes(app, deps);
    app.get(
      '/destinations/:destination_id',
      { schema: { tags, summary: 'Get a destination', params: destParams, response: answers({ 200: 'Destination' }) } },
      async (req: TenantReq) => destinationView(await load(deps, req)),
    );
    orderRoute(app, deps);
    toggleRoutes(app, deps);
  };
}
