/**
 * The OpenAPI document's one source: the named models of every request and response (registered
 * with fastify by $id, so request validation and the document use the same objects) and the rules
 * that make each operation exact. Responses are not serialized through these schemas (the gateway
 * sends JSON.stringify's output, so a schema can never hide or coerce a field); the e2e suites check
 * every response they see against the document instead (shared/src/testing/openapi.ts).
 *
 * Per operation, derived from the route so that no route can get it wrong: path parameters are
 * exactly those in its path; a public route (config.public) needs no credential; every status it
 * can answer is documented, errors with the Error model.
 */
import type { FastifyInstance, FastifySchema } from 'fastify';
import { ERRORS } from '@switchyard/shared/errors.ts';
import type { Config } from '@switchyard/shared/config/index.ts';
import { DESTINATION_TYPES } from '@switchyard/shared/model/index.ts';
import { orderedSchema, rateLimitSchema } from '@switchyard/shared/destinations/controls.ts';
import { answeredTypeNames, type TypeNames } from './type-names.ts';
import { idParam } from './routes/common.ts';

/** Path parameters the input guards hold to ID_PATTERN (guards.ts). */
const ID_PARAMS = new Set(['tenant_id', 'destination_id', 'event_id']);

const dateTime = { type: 'string', format: 'date-time' } as const;
const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;
const strings = { type: 'array', items: { type: 'string' } } as const;
/** A reference to a model, as fastify (validation) and @fastify/swagger (the document) resolve it. */
export const ref = (name: ModelName) => ({ $ref: `${name}#` }) as const;

const fieldDescriptor = {
  type: 'object',
  required: ['key', 'type', 'label', 'required'],
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
    validation: { type: 'string', description: 'The regular expression of `pattern`, under the name interface.md gives it.' },
    options: {
      type: 'array',
      items: { type: 'object', required: ['label', 'value'], properties: { label: { type: 'string' }, value: { type: 'string' } } },
    },
  },
} as const;

const pagination = {
  type: 'object',
  required: ['order_by', 'dir', 'limit', 'next', 'prev'],
  properties: {
    order_by: { type: 'string', enum: ['time', 'created_at'] },
    dir: { type: 'string', enum: ['asc', 'desc'] },
    limit: { type: 'integer', minimum: 1, maximum: 1000 },
    next: { type: ['string', 'null'], description: 'Cursor of the next page; null on the last.' },
    prev: { type: ['string', 'null'], description: 'Cursor of the previous page; null on the first.' },
  },
} as const;

const page = (item: ModelName) =>
  ({
    type: 'object',
    required: ['models', 'pagination'],
    properties: { models: { type: 'array', items: ref(item) }, pagination: ref('Pagination') },
  }) as const;

const publishResultProps = {
  id: { type: 'string' },
  duplicate: { type: 'boolean', description: 'The id was accepted before; nothing new was published.' },
  destination_ids: { ...strings, description: 'The enabled destinations it routes to.' },
  deliver_at: { ...dateTime, description: 'A scheduled event: when its deliveries are due (not on a repeat, `duplicate`).' },
} as const;

/** Every named model of the API, by component name. */
export const MODELS = {
  Error: {
    type: 'object',
    description: 'The one error shape (docs/errors.md).',
    required: ['status', 'code', 'message'],
    properties: {
      status: { type: 'integer', description: 'The HTTP status, repeated.' },
      code: { type: 'string', enum: Object.keys(ERRORS) },
      message: { type: 'string' },
      data: { type: 'array', items: { type: 'string' }, description: 'Validation errors: every problem as "<path> <message>".' },
      problems: {
        type: 'array',
        items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } },
      },
    },
  },
  Pagination: pagination,
  Tenant: {
    type: 'object',
    required: ['id', 'destinations_count', 'topics', 'created_at', 'updated_at'],
    properties: {
      id: { type: 'string' },
      destinations_count: { type: 'integer' },
      topics: { ...strings, description: 'Topics subscribed across the tenant’s destinations.' },
      metadata: stringMap,
      created_at: dateTime,
      updated_at: dateTime,
    },
  },
  TenantPage: page('Tenant'),
  TenantToken: {
    type: 'object',
    required: ['token', 'tenant_id'],
    properties: { token: { type: 'string' }, tenant_id: { type: 'string' } },
  },
  PortalRedirect: {
    type: 'object',
    required: ['redirect_url', 'tenant_id'],
    properties: { redirect_url: { type: 'string', format: 'uri' }, tenant_id: { type: 'string' } },
  },
  Success: { type: 'object', required: ['success'], properties: { success: { type: 'boolean' } } },
  Destination: {
    type: 'object',
    required: ['id', 'tenant_id', 'type', 'topics', 'config', 'credentials', 'disabled_at', 'created_at', 'updated_at', 'target'],
    properties: {
      id: { type: 'string' },
      tenant_id: { type: 'string' },
      type: { type: 'string', enum: [...DESTINATION_TYPES] },
      topics: { anyOf: [{ type: 'string', const: '*' }, strings] },
      config: { type: 'object', additionalProperties: true },
      credentials: { type: 'object', additionalProperties: true, description: 'Sensitive values masked; the webhook secret readable.' },
      disabled_at: { ...dateTime, type: ['string', 'null'] },
      created_at: dateTime,
      updated_at: dateTime,
      target: { type: 'string' },
      target_url: { type: 'string', format: 'uri' },
      filter: { type: 'object', additionalProperties: true },
      delivery_metadata: stringMap,
      metadata: stringMap,
      rate_limit: { ...rateLimitSchema, type: 'object', description: 'The destination’s rate limit; absent: none.' },
      ordered: {
        ...orderedSchema,
        type: 'boolean',
        description: 'True when the destination’s deliveries are made in order; absent: false.',
      },
    },
  },
  DestinationList: { type: 'array', items: ref('Destination') },
  DestinationOrder: {
    type: 'object',
    required: ['ordered', 'blocked', 'waiting'],
    description: 'An ordered destination’s delivery order now: what blocks it and what waits in its spill, as its sender last wrote them.',
    properties: {
      ordered: { type: 'boolean' },
      blocked: {
        type: ['object', 'null'],
        description: 'The delivery being retried while later ones wait behind it; null: nothing blocks the destination.',
        required: ['event_id', 'attempt_number', 'next_attempt_at', 'waiting', 'since'],
        properties: {
          event_id: { type: 'string' },
          attempt_number: { type: 'integer', description: 'Its last failed attempt.' },
          next_attempt_at: dateTime,
          waiting: { type: 'integer', description: 'Deliveries waiting behind it in the destination’s spill (as `waiting` below).' },
          since: { ...dateTime, description: 'When this event started blocking the destination.' },
        },
      },
      waiting: {
        type: 'integer',
        description:
          'Deliveries waiting in the destination’s spill for their turn, the blocking one left out (a manual retry of its event counts): written there while it is blocked, made in order once it is not.',
      },
    },
  },
  Event: {
    type: 'object',
    required: ['id', 'tenant_id', 'topic', 'time', 'eligible_for_retry', 'metadata'],
    properties: {
      id: { type: 'string' },
      tenant_id: { type: 'string' },
      destination_id: { type: 'string', description: 'The destination it was published to, or the one a listing is scoped to.' },
      topic: { type: 'string' },
      time: dateTime,
      eligible_for_retry: { type: 'boolean' },
      metadata: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
      data: { description: 'The payload as published (left out where not asked for).' },
      successful_at: { ...dateTime, description: 'When a delivery (in scope) succeeded; left out while none has.' },
      status: {
        type: 'string',
        enum: ['pending', 'scheduled', 'success', 'failed', 'skipped', 'canceled'],
        description:
          'The delivery’s state, in listings scoped to one destination; scheduled (in every listing) while a scheduled event is not due yet.',
      },
      deliver_at: { ...dateTime, description: 'A scheduled event: when its deliveries are due.' },
    },
  },
  EventPage: page('Event'),
  EventInArray: {
    type: 'array',
    items: ref('Event'),
    minItems: 1,
    maxItems: 1,
    description: 'One event, as an array holding it (interface.md’s first form).',
  },
  Attempt: {
    type: 'object',
    required: ['id', 'tenant_id', 'destination_id', 'event_id', 'topic', 'status', 'code', 'attempt_number', 'manual', 'final', 'time'],
    properties: {
      id: { type: 'string' },
      tenant_id: { type: 'string' },
      destination_id: { type: 'string' },
      event_id: { type: 'string' },
      topic: { type: 'string' },
      status: {
        type: 'string',
        enum: ['success', 'failed'],
        description:
          'An attempt that ended without a request (its destination deleted or disabled, its event or the destination’s queue canceled) is failed with code ERR, and response_data.reason says why: destination_deleted, destination_disabled, event_canceled or canceled. The status filter `canceled` lists those.',
      },
      code: { type: 'string', description: 'OK, ERR, or the HTTP status of the destination’s answer.' },
      response_data: { type: 'object', additionalProperties: true },
      attempt_number: { type: 'integer', minimum: 1 },
      manual: { type: 'boolean' },
      final: { type: 'boolean', description: 'No further automatic attempt follows.' },
      duration_ms: { type: 'integer' },
      time: dateTime,
      event: ref('Event'),
      destination: ref('Destination'),
    },
  },
  AttemptPage: page('Attempt'),
  EventDelivery: {
    type: 'object',
    description: 'An attempt of the event, with the delivered_at of interface.md’s deliveries listing.',
    allOf: [ref('Attempt')],
    required: ['delivered_at'],
    properties: { delivered_at: dateTime },
  },
  EventDeliveryList: { type: 'array', items: ref('EventDelivery') },
  PublishResult: { type: 'object', required: ['id', 'duplicate', 'destination_ids'], properties: publishResultProps },
  BatchPublishResult: {
    type: 'object',
    required: ['results'],
    properties: {
      results: {
        type: 'array',
        description: 'One result per event, in order: the publish result with status 202, or an error.',
        items: {
          anyOf: [
            {
              type: 'object',
              required: ['status', 'id', 'duplicate', 'destination_ids'],
              properties: { status: { type: 'integer', const: 202 }, ...publishResultProps },
            },
            ref('Error'),
          ],
        },
      },
    },
  },
  DestinationTypeSchema: {
    type: 'object',
    required: ['type', 'label', 'description', 'icon', 'instructions', 'config_fields', 'credential_fields'],
    properties: {
      type: { type: 'string', enum: [...DESTINATION_TYPES] },
      label: { type: 'string' },
      description: { type: 'string' },
      icon: { type: 'string', description: 'SVG markup.' },
      instructions: { type: 'string', description: 'Markdown.' },
      remote_setup_url: { type: 'string', format: 'uri' },
      config_fields: { type: 'array', items: fieldDescriptor },
      credential_fields: { type: 'array', items: fieldDescriptor },
      controls: {
        type: 'object',
        description: 'Delivery controls every destination accepts beside its config (rate_limit, ordered), as JSON Schema.',
        properties: { rate_limit: { type: 'object', additionalProperties: true }, ordered: { type: 'object', additionalProperties: true } },
        additionalProperties: true,
      },
    },
  },
  DestinationTypeSchemaList: { type: 'array', items: ref('DestinationTypeSchema') },
  Topics: strings,
  Health: {
    type: 'object',
    required: ['status', 'timestamp', 'checks', 'workers'],
    properties: {
      status: { type: 'string', enum: ['healthy', 'failed'] },
      timestamp: { type: 'string', format: 'date-time', description: 'When the checks ran.' },
      checks: { type: 'object', additionalProperties: { type: 'string', enum: ['ok', 'failed'] } },
      workers: {
        type: 'object',
        description: 'The checks again, in the form the other service answers: {name: {status}}.',
        additionalProperties: {
          type: 'object',
          required: ['status'],
          properties: { status: { type: 'string', enum: ['healthy', 'failed'] } },
        },
      },
    },
  },
} as const;

export type ModelName =
  | 'Error'
  | 'Pagination'
  | 'Tenant'
  | 'TenantPage'
  | 'TenantUpsert'
  | 'TenantToken'
  | 'PortalRedirect'
  | 'Success'
  | 'Destination'
  | 'DestinationList'
  | 'DestinationOrder'
  | 'DestinationCreate'
  | 'DestinationUpdate'
  | 'Event'
  | 'EventPage'
  | 'EventInArray'
  | 'PublishBatchRequest'
  | 'Attempt'
  | 'AttemptPage'
  | 'EventDelivery'
  | 'EventDeliveryList'
  | 'PublishRequest'
  | 'PublishResult'
  | 'BatchPublishResult'
  | 'RetryRequest'
  | 'DestinationTypeSchema'
  | 'DestinationTypeSchemaList'
  | 'Topics'
  | 'Health'
  | 'DestinationHealth'
  | 'OperatorEventPage'
  | 'MetricCounts'
  | 'MetricsResponse'
  | 'MetricsAnswer'
  | 'ReplayRequest'
  | 'ReplayResult';

/** Registers every model (and the request models given) by $id, for `ref(name)` to resolve. */
export function registerModels(app: FastifyInstance, requests: Partial<Record<ModelName, object>>): void {
  for (const [name, schema] of Object.entries({ ...MODELS, ...requests })) app.addSchema({ $id: name, ...schema });
}

/**
 * The responses of an operation: its success answers, plus the errors it answers beyond those
 * every route of its kind may (exactOperation adds those).
 */
export const answers = (ok: Record<number, ModelName | object>, errors: readonly number[] = []) => {
  const out: Record<number, object> = {};
  for (const [status, model] of Object.entries(ok)) out[Number(status)] = typeof model === 'string' ? ref(model as ModelName) : model;
  for (const status of errors) out[status] = { ...ref('Error'), description: errorDescriptions[status] };
  return out;
};

const errorDescriptions: Record<number, string> = {
  400: 'Malformed request: invalid JSON, an empty body where one is required, or the destination limit reached.',
  401: 'Missing or invalid credentials.',
  403: 'The credentials do not allow this request.',
  404: 'Not found: the tenant, destination, event, attempt or type.',
  408: 'The request body did not arrive within API_BODY_TIMEOUT_MS.',
  409: 'Conflict.',
  413: 'The body is too large.',
  415: 'The body is not application/json.',
  422: 'Validation failed: data lists every problem.',
  429: 'The delivery backlog is over PUBLISH_MAX_BACKLOG: nothing was published. Retry after Retry-After.',
  500: 'Internal error.',
  503: 'Temporarily unavailable; nothing was changed. Retry.',
};

type RouteLike = { method: string | string[]; url: string; config?: unknown; schema?: FastifySchema };

/**
 * @fastify/swagger's per-route transform: the rules that make every operation exact, applied to
 * the document only (the route's own schema keeps validating requests as written).
 */
export function exactOperation({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteLike }) {
  const s = { ...(schema ?? {}) } as Record<string, unknown>;
  const pathParams = [...url.matchAll(/:(\w+)/g)].map((m) => m[1] as string);
  const declared = ((s.params as { properties?: Record<string, object> } | undefined)?.properties ?? {}) as Record<string, object>;
  if (pathParams.length) {
    const properties: Record<string, object> = {};
    // Ids in the path are held to ID_PATTERN by the input guards (guards.ts), whether or not the route says so.
    for (const p of pathParams)
      properties[p] = declared[p] ?? (ID_PARAMS.has(p) ? idParam : { type: 'string', minLength: 1, maxLength: 255 });
    s.params = { type: 'object', required: pathParams, properties };
  } else delete s.params;

  const isPublic = (route.config as { public?: boolean } | undefined)?.public === true;
  if (isPublic) s.security = [];
  const responses = { ...((s.response as Record<string, object> | undefined) ?? {}) };
  const method = [route.method].flat()[0] as string;
  const takesBody = s.body !== undefined || ['PUT', 'DELETE', 'POST', 'PATCH'].includes(method);
  const statuses = [500, 503];
  if (!isPublic) statuses.push(401, 403, 404, 422);
  // Any request may be refused as malformed (bad percent-encoding, docs/api.md); a body also for its
  // size, its type, or arriving too slowly (body-budget.ts).
  statuses.push(400);
  if (takesBody) statuses.push(408, 413, 415);
  for (const st of statuses) {
    const key = String(st);
    if (!(key in responses)) responses[key] = { ...ref('Error'), description: errorDescriptions[st] };
  }
  s.response = responses;
  return { schema: s, url };
}

const okDescriptions: Record<string, string> = { '200': 'OK.', '201': 'Created.', '202': 'Accepted.' };

/** The error answers every operation shares, as named responses (components.responses). */
const ERROR_RESPONSES: Record<string, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '403': 'Forbidden',
  '404': 'NotFound',
  '408': 'RequestTimeout',
  '409': 'Conflict',
  '413': 'PayloadTooLarge',
  '415': 'UnsupportedMediaType',
  '422': 'ValidationFailed',
  '500': 'InternalError',
  '503': 'ServiceUnavailable',
};

/**
 * @fastify/swagger's whole-document transform: a request body is required only where the route
 * refuses an empty one (json-body.ts: a body schema that admits null is optional), success answers
 * say what they are rather than "Default Response", and the shared error answers are named
 * responses (`#/components/responses/NotFound`, ...) rather than a copy in every operation.
 */
export function exactDocument({ openapiObject }: { openapiObject: Partial<OpenApiLike> }, opts: DocumentOptions) {
  openapiObject.servers = [{ url: opts.serverUrl().replace(/\/+$/, ''), description: 'This deployment (API_BASE_URL).' }];
  if (openapiObject.info) openapiObject.info.license = { name: 'Apache-2.0', identifier: 'Apache-2.0' };
  canonicalPaths(openapiObject);
  // Answers carry the type names API_TYPE_NAMES picks (type-names.ts): the answer models enumerate those.
  for (const model of ['Destination', 'DestinationTypeSchema']) {
    const props = (openapiObject.components?.schemas?.[model] as { properties?: Record<string, object> } | undefined)?.properties;
    if (props) props.type = { type: 'string', enum: [...opts.typeNames] };
  }
  const schemas = openapiObject.components?.schemas ?? {};
  // A batch's events are validated one at a time (routes/publish.ts: a bad one fails alone), so the
  // model that validates the batch leaves them untyped; the document says what each must be.
  const batch = schemas.PublishBatchRequest as { properties?: Record<string, object> } | undefined;
  if (batch?.properties?.events)
    batch.properties.events = { ...batch.properties.events, items: { $ref: '#/components/schemas/PublishRequest' } };
  const responses: Record<string, object> = {};
  for (const [status, name] of Object.entries(ERROR_RESPONSES))
    responses[name] = {
      description: errorDescriptions[Number(status)],
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  if (openapiObject.components) (openapiObject.components as { responses?: object }).responses = responses;
  for (const ops of Object.values(openapiObject.paths ?? {})) {
    for (const op of Object.values(ops)) {
      const content = op.requestBody?.content?.['application/json'];
      const refName = content?.schema?.$ref?.replace('#/components/schemas/', '');
      const bodySchema = refName ? schemas[refName] : content?.schema;
      if (op.requestBody && [bodySchema?.type].flat().includes('null')) op.requestBody.required = false;
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        if (r.description === 'Default Response') r.description = okDescriptions[status] ?? 'OK.';
        const name = ERROR_RESPONSES[status];
        const isError = (r.content?.['application/json']?.schema as { $ref?: string } | undefined)?.$ref === '#/components/schemas/Error';
        if (name && isError && r.description === errorDescriptions[Number(status)] && op.responses)
          op.responses[status] = { $ref: `#/components/responses/${name}` };
      }
    }
  }
  return openapiObject;
}

interface DocumentOptions {
  /** The names answers carry for destination types (type-names.ts). */
  typeNames: readonly string[];
  /** Where this deployment serves the API: the document's one server (read when the document is built). */
  serverUrl: () => string;
}

/** @fastify/swagger's transforms for this deployment's document. */
export function documentTransforms(config: Config, serverUrl: () => string) {
  const opts: DocumentOptions = { typeNames: answeredTypeNames(config.API_TYPE_NAMES as TypeNames), serverUrl };
  return {
    transform: exactOperation,
    transformObject: ((o: { openapiObject: Partial<OpenApiLike> }) => exactDocument(o, opts)) as never,
  };
}

/*
 * One path per operation. Tenant-scoped routes are served in three forms (TENANT_PREFIXES):
 * /api/v1/tenants/{tenant_id}/x, interface.md's first form /api/v1/{tenant_id}/x, and /api/v1/x
 * with the tenant taken from a tenant token. The document lists each operation once, at its
 * canonical path, and names the other forms it is also served at in `x-aliases` (and its
 * description), so that a client generator makes one method of it. The canonical path is the
 * /tenants/{tenant_id} form (the one without a tenant for TENANT_FREE); an operation that, without a tenant in the path, also answers the
 * admin key across tenants (ACROSS_TENANTS) is two operations: that one, and the form without a
 * tenant (tenant_id, where it narrows, in the query).
 */
const TENANT_FORMS = ['/api/v1/tenants/{tenant_id}', '/api/v1/{tenant_id}', '/api/v1'] as const;
/** Operations whose answer is the same whatever the tenant: the form without one is canonical. */
const TENANT_FREE = new Set(['get /destination-types', 'get /destination-types/{type}']);
const ACROSS_TENANTS = new Set([
  'get /attempts',
  'get /attempts/{attempt_id}',
  'get /events',
  'get /events/{event_id}',
  'get /events/{event_id}/deliveries',
  'get /metrics/attempts',
  'get /metrics/events',
  'get /operator-events',
]);
/** Other paths served as another's alias. */
const PATH_ALIASES: Record<string, string> = { '/api/v1/healthz': '/healthz' };

/**
 * Every operation's stable name, by canonical path: what client generators name their methods.
 * The other service's names where it has the operation.
 */
export const OPERATION_IDS: Record<string, string> = {
  'get /healthz': 'healthCheck',
  'post /api/v1/publish': 'publishEvent',
  'post /api/v1/publish/batch': 'publishEvents',
  'post /api/v1/retry': 'retryEvent',
  'post /api/v1/tenants/{tenant_id}/destination/{destination_id}/events/{event_id}/retry': 'retryTenantDestinationEvent',
  'get /api/v1/destination-types': 'listDestinationTypeSchemas',
  'get /api/v1/destination-types/{type}': 'getDestinationTypeSchema',
  'get /api/v1/topics': 'listTopics',
  'get /api/v1/tenants': 'listTenants',
  'put /api/v1/tenants/{tenant_id}': 'upsertTenant',
  'get /api/v1/tenants/{tenant_id}': 'getTenant',
  'delete /api/v1/tenants/{tenant_id}': 'deleteTenant',
  'get /api/v1/tenants/{tenant_id}/token': 'getTenantToken',
  'get /api/v1/tenants/{tenant_id}/portal': 'getTenantPortalUrl',
  'get /api/v1/tenants/{tenant_id}/destinations': 'listTenantDestinations',
  'post /api/v1/tenants/{tenant_id}/destinations': 'createTenantDestination',
  'get /api/v1/tenants/{tenant_id}/destinations/{destination_id}': 'getTenantDestination',
  'patch /api/v1/tenants/{tenant_id}/destinations/{destination_id}': 'updateTenantDestination',
  'delete /api/v1/tenants/{tenant_id}/destinations/{destination_id}': 'deleteTenantDestination',
  'get /api/v1/tenants/{tenant_id}/destinations/{destination_id}/order': 'getTenantDestinationOrder',
  'put /api/v1/tenants/{tenant_id}/destinations/{destination_id}/enable': 'enableTenantDestination',
  'put /api/v1/tenants/{tenant_id}/destinations/{destination_id}/disable': 'disableTenantDestination',
  'get /api/v1/tenants/{tenant_id}/destinations/{destination_id}/attempts': 'listTenantDestinationAttempts',
  'get /api/v1/tenants/{tenant_id}/destinations/{destination_id}/attempts/{attempt_id}': 'getTenantDestinationAttempt',
  'get /api/v1/tenants/{tenant_id}/destinations/{destination_id}/health': 'getTenantDestinationHealth',
  'post /api/v1/tenants/{tenant_id}/destinations/{destination_id}/cancel': 'cancelTenantDestinationDeliveries',
  'post /api/v1/tenants/{tenant_id}/events/{event_id}/cancel': 'cancelTenantScheduledEvent',
  'get /api/v1/tenants/{tenant_id}/destination/{destination_id}/events': 'listTenantDestinationEvents',
  'get /api/v1/tenants/{tenant_id}/destination/{destination_id}/events/{event_id}': 'getTenantDestinationEvent',
  'post /api/v1/tenants/{tenant_id}/replay': 'replayTenantDeliveries',
  'get /api/v1/attempts': 'listAttempts',
  'get /api/v1/tenants/{tenant_id}/attempts': 'listTenantAttempts',
  'get /api/v1/attempts/{attempt_id}': 'getAttempt',
  'get /api/v1/tenants/{tenant_id}/attempts/{attempt_id}': 'getTenantAttempt',
  'get /api/v1/events': 'listEvents',
  'get /api/v1/tenants/{tenant_id}/events': 'listTenantEvents',
  'get /api/v1/events/{event_id}': 'getEvent',
  'get /api/v1/tenants/{tenant_id}/events/{event_id}': 'getTenantEvent',
  'get /api/v1/events/{event_id}/deliveries': 'listEventDeliveries',
  'get /api/v1/tenants/{tenant_id}/events/{event_id}/deliveries': 'listTenantEventDeliveries',
  'get /api/v1/metrics/attempts': 'getAttemptMetrics',
  'get /api/v1/tenants/{tenant_id}/metrics/attempts': 'getTenantAttemptMetrics',
  'get /api/v1/metrics/events': 'getEventMetrics',
  'get /api/v1/tenants/{tenant_id}/metrics/events': 'getTenantEventMetrics',
  'get /api/v1/operator-events': 'listOperatorEvents',
  'get /api/v1/tenants/{tenant_id}/operator-events': 'listTenantOperatorEvents',
};

/** A name for an operation the table lacks (the OpenAPI test fails on it): the method and the path's words. */
function fallbackOperationId(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter((w) => w && w !== 'api' && w !== 'v1');
  return method + words.map((w) => w[0]?.toUpperCase() + w.slice(1)).join('');
}

function tenantForm(path: string): { form: number; rest: string } | null {
  for (const [form, prefix] of TENANT_FORMS.entries())
    if (path === prefix || path.startsWith(`${prefix}/`)) return { form, rest: path.slice(prefix.length) };
  return null;
}

function aliasNote(path: string): string {
  return tenantForm(path)?.form === 2 && !PATH_ALIASES[path]
    ? `\`${path}\` with a tenant token (the tenant is the token's)`
    : `\`${path}\``;
}

/** Lists each operation once, at its canonical path, with its operationId and its aliases. */
function canonicalPaths(doc: Partial<OpenApiLike>): void {
  const paths = doc.paths ?? {};
  // Where each operation goes: its canonical path (itself, or the one it is an alias of).
  const groups = new Map<string, { path: string; form: number }[]>();
  for (const [path, ops] of Object.entries(paths))
    for (const method of Object.keys(ops)) {
      const t = tenantForm(path);
      const key = PATH_ALIASES[path] ? `${method} ${PATH_ALIASES[path]}` : t ? `${method} ${t.rest}` : `${method} ${path}`;
      groups.set(key, [...(groups.get(key) ?? []), { path, form: t && !PATH_ALIASES[path] ? t.form : -1 }]);
    }
  const aliasesOf = new Map<string, string[]>(); // "method canonicalPath" -> alias paths
  const isAlias = new Set<string>(); // "method path"
  for (const [key, members] of groups) {
    const method = key.slice(0, key.indexOf(' '));
    const byForm = (f: number) => members.find((m) => m.form === f)?.path;
    const pick = (canonical: string, aliases: (string | undefined)[]) => {
      const list = aliases.filter((p): p is string => p !== undefined && p !== canonical);
      aliasesOf.set(`${method} ${canonical}`, list);
      for (const a of list) isAlias.add(`${method} ${a}`);
    };
    const tenants = byForm(0);
    const none = byForm(2);
    if (ACROSS_TENANTS.has(key) && tenants && none) {
      pick(tenants, [byForm(1)]);
      pick(none, []);
    } else {
      const canonical =
        (TENANT_FREE.has(key) ? none : undefined) ??
        tenants ??
        none ??
        members.find((m) => m.form === -1 && !PATH_ALIASES[m.path])?.path ??
        members[0]?.path;
      if (canonical)
        pick(
          canonical,
          members.map((m) => m.path),
        );
    }
  }
  const out: OpenApiLike['paths'] = {};
  for (const [path, ops] of Object.entries(paths)) {
    const pathParams = new Set([...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
    for (const [method, op] of Object.entries(ops)) {
      if (isAlias.has(`${method} ${path}`)) continue;
      op.operationId = OPERATION_IDS[`${method} ${path}`] ?? fallbackOperationId(method, path);
      // A tenant named in the path is the only one: its query twin (for the form without it) is not listed.
      if (op.parameters) op.parameters = op.parameters.filter((p) => !(p.in === 'query' && pathParams.has(p.name)));
      const aliases = aliasesOf.get(`${method} ${path}`) ?? [];
      if (aliases.length) {
        op['x-aliases'] = aliases;
        const note = `Also served at ${aliases.map(aliasNote).join(', ')}.`;
        op.description = op.description ? `${op.description}\n\n${note}` : note;
      }
      out[path] = { ...out[path], [method]: op };
    }
  }
  doc.paths = out;
}

interface OpenApiLike {
  servers: { url: string; description?: string }[];
  info: { license?: { name: string; identifier: string } };
  components: { schemas: Record<string, { type?: string | string[] }> };
  paths: Record<
    string,
    Record<
      string,
      {
        operationId?: string;
        description?: string;
        'x-aliases'?: string[];
        parameters?: { in: string; name: string }[];
        requestBody?: { required?: boolean; content?: Record<string, { schema?: { $ref?: string; type?: string | string[] } }> };
        responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }>; $ref?: string }>;
      }
    >
  >;
}
