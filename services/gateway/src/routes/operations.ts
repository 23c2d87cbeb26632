// What operators watch, through the API:
// - GET .../destinations/{id}/health: a destination's health (consecutive failures, last success
//   and failure, why it is disabled);
// - GET .../metrics/attempts and .../metrics/events: attempts and events received per time bucket
//   (minute, hour, day), counts and rates, split and filtered by their dimensions (queries/metrics.ts);
//   the same paths also take the other service's query form (measures, time[start], ...), answered
//   in its shape (metrics-peer.ts);
// - GET .../operator-events: the operator events (alerts, auto-disables) the attempts service
//   raises, which otherwise reach only the operator-events topic and the optional callback.
// Tenant-scoped under every tenant prefix; with the admin key and no tenant in the path, metrics and
// operator events of every tenant (metrics narrowed by `tenant_id`).
import { checkedInstant } from '@switchyard/shared/time.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { OperationsStore } from '@switchyard/shared/db/stores/operations.ts';
import { AppError } from '@switchyard/shared/errors.ts';
import { requireTenantAccess } from '../auth.ts';
import { ATTEMPT_DIMENSIONS, BUCKETS, type Bucket, type CountQuery, minuteByDestination } from '../queries/metrics.ts';
import type { PeerQuery } from '../queries/peer-metrics.ts';
import type { QueryStore } from '../queries/store.ts';
import type { TypeNames } from '../type-names.ts';
import type { TenantCheck } from './deps.ts';
import { existingTenant, idParam, multi, type TenantReq } from './common.ts';
import { answerPeer, isPeerForm, type MetricsKind, peerAnswerSchema, peerQueryDocs } from './metrics-peer.ts';
import { pageQuerySchema, pageRequest } from './paging.ts';
import { answers, ref } from '../openapi.ts';

const time = { type: ['string', 'null'], format: 'date-time' } as const;

const healthSchema = {
  type: 'object',
  properties: {
    destination_id: { type: 'string' },
    consecutive_failures: { type: 'integer', description: 'Failed attempts in a row since the last success.' },
    last_attempt_at: time,
    last_success_at: time,
    last_failure_at: time,
    last_failure_code: { type: ['string', 'null'], description: "'ERR' or the HTTP status of the newest failed attempt." },
    disabled_at: time,
    disabled_reason: {
      type: ['string', 'null'],
      enum: ['consecutive_failures', 'manual', null],
      description: 'consecutive_failures: disabled by ALERT_AUTO_DISABLE_DESTINATION; manual: through the API; null: enabled.',
    },
  },
} as const;

const operatorEventSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: ['alert.consecutive_failure', 'destination.auto_disabled'] },
    time: { type: 'string', format: 'date-time' },
    tenant_id: { type: 'string' },
    destination_id: { type: 'string' },
    data: { type: 'object', additionalProperties: true },
  },
} as const;

const listQuery = {
  type: 'object',
  properties: {
    ...pageQuerySchema.properties,
    type: { type: 'string', description: 'Only these types (comma-separated or repeated).' },
    destination_id: { type: 'string', description: 'Only events of this destination.' },
  },
} as const;

/** Most buckets one metrics query may return per series (a week of minutes). */
export const METRICS_MAX_BUCKETS = 10_080;

const many = (description: string) => ({ type: 'string', description: `${description} (comma-separated or repeated)` }) as const;
/** Our form's parameters. */
const ourQuery = (dimensions: readonly string[]) =>
  ({
    start: { type: 'string', format: 'date-time', description: 'Start of the range (default: end minus 24 h).' },
    end: { type: 'string', format: 'date-time', description: 'End of the range, exclusive (default: now).' },
    bucket: { type: 'string', enum: Object.keys(BUCKETS), default: 'hour', description: 'Bucket width, aligned to UTC.' },
    group_by: many(`Split each bucket by these of: ${dimensions.join(', ')}`),
    ...Object.fromEntries(dimensions.map((d) => [d, many(`Only these values of ${d}`)])),
    tenant_id: many('Admin key only, without a tenant in the path: only these tenants'),
  }) as const;
/** Our form's parameters (the schema validates them) and, documented beside them, the other service's (metrics-peer.ts validates those). */
const countsQuery = (dimensions: readonly string[], kind: MetricsKind) =>
  ({ type: 'object', properties: { ...ourQuery(dimensions), ...peerQueryDocs(kind) } }) as const;
const countsResponse = {
  type: 'object',
  // A generator tells the two metrics forms apart by them (MetricsAnswer). Not group_by, also always
  // sent: typescript-fetch checks a required field by its camelCase name (groupBy) in the JSON.
  required: ['bucket', 'start', 'end', 'total', 'series'],
  properties: {
    bucket: { type: 'string' },
    start: { type: 'string', format: 'date-time' },
    end: { type: 'string', format: 'date-time' },
    group_by: { type: 'array', items: { type: 'string' } },
    total: { type: 'integer' },
    series: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: { type: ['string', 'number'] },
        properties: {
          time: { type: 'string', format: 'date-time' },
          count: { type: 'integer' },
          rate: { type: 'number', description: 'count per second of the bucket' },
        },
      },
    },
  },
} as const;

type ListReq = FastifyRequest<{ Params: { tenant_id?: string }; Querystring: Record<string, unknown> }>;

/** A metrics route's handler: checks the range, bucket and dimensions asked for, then counts with `run`. */
const countsOf =
  <D extends string>(tenants: TenantCheck, dimensions: readonly D[], run: (q: CountQuery<D>) => Promise<unknown[]>) =>
  async (req: ListReq) => {
    const q = req.query;
    const p = req.principal;
    const pathTenant = req.params.tenant_id ?? (p.kind === 'tenant' ? p.tenantId : null);
    let tenantIds: string[] | null = null;
    if (pathTenant !== null) {
      requireTenantAccess(p, pathTenant);
      await existingTenant(tenants, req as TenantReq);
      tenantIds = [pathTenant];
    } else {
      tenantIds = multi(q, 'tenant_id') ?? null;
    }
    const problems: Array<{ path: string; message: string }> = [];
    const end = typeof q.end === 'string' ? checkedInstant(q.end) : new Date();
    const start = typeof q.start === 'string' ? checkedInstant(q.start) : new Date(end.getTime() - 86_400_000);
    const bucket = (q.bucket ?? 'hour') as Bucket;
    if (!(start < end)) problems.push({ path: 'query.start', message: 'must be before end' });
    if ((end.getTime() - start.getTime()) / 1000 / BUCKETS[bucket] > METRICS_MAX_BUCKETS)
      problems.push({
        path: 'query.bucket',
        message: `the range holds more than ${METRICS_MAX_BUCKETS} ${bucket} buckets: use a wider bucket`,
      });
    const groupBy = (multi(q, 'group_by') ?? []) as D[];
    for (const g of groupBy)
      if (!dimensions.includes(g)) problems.push({ path: 'query.group_by', message: `"${g}" is not one of ${dimensions.join(', ')}` });
    const filters = Object.fromEntries(dimensions.map((d) => [d, multi(q, d)])) as Partial<Record<D, string[]>>;
    if (minuteByDestination({ bucket, filters, groupBy }))
      problems.push({
        path: 'query.bucket',
        message: 'minute buckets are not kept per destination: use bucket=hour to filter or group by destination_id',
      });
    if (problems.length) throw AppError.validation(problems);
    const series = (await run({ tenantIds, start, end, bucket, filters, groupBy: [...new Set(groupBy)] })) as Array<{ count: number }>;
    return {
      bucket,
      start: start.toISOString(),
      end: end.toISOString(),
      group_by: groupBy,
      total: series.reduce((a, s) => a + s.count, 0),
      series,
    };
  };

export interface OperationsRouteDeps {
  tenants: TenantCheck;
  /** Destination health and operator events. */
  operations: Pick<OperationsStore, 'health' | 'listEvents'>;
  /** The metrics counts, and the metrics in the other service's form. */
  queries: Pick<QueryStore, 'attemptCounts' | 'eventCounts' | 'peerAttemptMetrics' | 'peerEventMetrics'>;
  /** The type names answers carry (API_TYPE_NAMES). */
  typeNames: TypeNames;
}

/**
 * A request in the other service's form, kept aside before schema validation, which then sees an
 * empty query: the schema validates our form only (its documented peer parameters are checked by
 * metrics-peer.ts, every problem at once).
 */
const peerQueries = new WeakMap<FastifyRequest, Record<string, unknown>>();
const setAsidePeerForm = async (req: ListReq) => {
  const q = req.query;
  if (!isPeerForm(q)) return;
  peerQueries.set(req, q);
  req.query = {};
};

export function operationsRoutes(deps: OperationsRouteDeps) {
  const { operations: store, queries } = deps;
  const peer = {
    tenants: deps.tenants,
    typeNames: deps.typeNames,
    run: (kind: MetricsKind, q: PeerQuery) => (kind === 'attempts' ? queries.peerAttemptMetrics(q) : queries.peerEventMetrics(q)),
  };
  /** Our form's handler, or the other service's for a request in its form. */
  const metrics = (kind: MetricsKind, ours: (req: ListReq) => Promise<unknown>, ourKeys: readonly string[]) => async (req: ListReq) => {
    const q = peerQueries.get(req);
    return q ? answerPeer(peer, kind, ourKeys, req, q) : ours(req);
  };
  const attemptKeys = Object.keys(ourQuery(ATTEMPT_DIMENSIONS));
  const eventKeys = Object.keys(ourQuery(['topic']));
  return async (app: FastifyInstance) => {
    app.get(
      '/destinations/:destination_id/health',
      {
        schema: {
          tags: ['destinations'],
          summary: "A destination's health: consecutive failures, last success and failure, why it is disabled",
          params: { type: 'object', properties: { tenant_id: idParam, destination_id: idParam } },
          response: answers({ 200: 'DestinationHealth' }),
        },
      },
      async (req: TenantReq) => {
        const tenantId = await existingTenant(deps.tenants, req);
        const health = await store.health(tenantId, req.params.destination_id ?? '');
        if (!health) throw new AppError('DESTINATION_NOT_FOUND');
        return health;
      },
    );

    app.get(
      '/metrics/attempts',
      {
        preValidation: setAsidePeerForm,
        schema: {
          tags: ['metrics'],
          summary:
            "Attempts per time bucket (minute, hour, day), by topic, destination, status and code; counts and rates. Also in the other service's query form (measures, time[start], time[end], granularity, dimensions, filters[...]), answered as MetricsResponse.",
          params: { type: 'object', properties: { tenant_id: idParam } },
          querystring: countsQuery(ATTEMPT_DIMENSIONS, 'attempts'),
          response: answers({ 200: 'MetricsAnswer' }),
        },
      },
      metrics(
        'attempts',
        countsOf(deps.tenants, ATTEMPT_DIMENSIONS, (q) => queries.attemptCounts(q)),
        attemptKeys,
      ),
    );
    app.get(
      '/metrics/events',
      {
        preValidation: setAsidePeerForm,
        schema: {
          tags: ['metrics'],
          summary:
            "Events received per time bucket (minute, hour, day), by topic; counts and rates. Also in the other service's query form (measures, time[start], time[end], granularity, dimensions, filters[...]: by event time, tenant, topic and destination), answered as MetricsResponse.",
          params: { type: 'object', properties: { tenant_id: idParam } },
          querystring: countsQuery(['topic'], 'events'),
          response: answers({ 200: 'MetricsAnswer' }),
        },
      },
      metrics(
        'events',
        countsOf(deps.tenants, ['topic'] as const, (q) => queries.eventCounts(q)),
        eventKeys,
      ),
    );

    app.get(
      '/operator-events',
      {
        schema: {
          tags: ['operations'],
          summary: 'Operator events (alerts, auto-disables), newest first; the admin key without a tenant in the path lists every tenant',
          params: { type: 'object', properties: { tenant_id: idParam } },
          querystring: listQuery,
          response: answers({ 200: 'OperatorEventPage' }),
        },
      },
      async (req: ListReq) => {
        const p = req.principal;
        const tenantId = req.params.tenant_id ?? (p.kind === 'tenant' ? p.tenantId : null);
        if (tenantId !== null) {
          requireTenantAccess(p, tenantId);
          await existingTenant(deps.tenants, req as TenantReq);
        }
        const destinationId = typeof req.query.destination_id === 'string' ? req.query.destination_id : undefined;
        return store.listEvents(tenantId, { type: multi(req.query, 'type'), destinationId }, pageRequest(req.query, 'op'));
      },
    );
  };
}

/** The named models of these routes (components of the OpenAPI document, registered in app.ts). */
export const OPERATIONS_MODELS = {
  DestinationHealth: healthSchema,
  OperatorEventPage: {
    type: 'object',
    properties: {
      models: { type: 'array', items: operatorEventSchema },
      pagination: { type: 'object', additionalProperties: true },
    },
  },
  MetricCounts: countsResponse,
  /** The answer in the other service's query form. */
  MetricsResponse: peerAnswerSchema,
  /** Either form's answer: MetricCounts for ours, MetricsResponse for the other service's. */
  MetricsAnswer: {
    description:
      "MetricCounts for this API's query form (bucket, start, end, group_by); MetricsResponse for the other service's (measures, time[start], ...).",
    // oneOf, not anyOf: the forms share no required field, and generators that merge an anyOf into
    // one model (openapi-generator's typescript-fetch) then required both forms' fields at once.
    oneOf: [ref('MetricCounts'), ref('MetricsResponse')],
  },
} as const;
