/**
 * The metrics routes' second query form: the other service's (its SDKs send it to the same paths),
 * answered from the rows by queries/peer-metrics.ts. A request is in that form when it carries any of
 * measures, time[start], time[end], granularity, dimensions or a filters[...] key; a parameter of our
 * form beside them is a 422 naming it. Every problem of the query is reported at once (422, not the
 * other service's 400). Tenants, as that service rules them:
 * - a tenant token may not split by tenant_id (403), and filters[tenant_id], when given, must be
 *   exactly its own tenant (403), which it is set to otherwise;
 * - a tenant in the path scopes the query the same way (the admin key naming another tenant in
 *   filters[tenant_id] beside it: 422);
 * - the admin key without a tenant in the path reads every tenant, or those of filters[tenant_id].
 * destination_type values are answered in the type names of this request's answers (type-names.ts)
 * and filtered by either service's names.
 */
import type { FastifyRequest } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import { canonicalType, INPUT_TYPE_NAMES, OUTPOST_TYPE_NAMES } from '@switchyard/shared/destinations/registry.ts';
import type { DestinationType } from '@switchyard/shared/model/index.ts';
import { requireTenantAccess } from '../auth.ts';
import {
  ATTEMPT_DIMENSIONS,
  ATTEMPT_MEASURES,
  bucketsOf,
  EVENT_DIMENSIONS,
  EVENT_MEASURES,
  type Granularity,
  MAX_BUCKETS,
  MAX_POINTS,
  MetricsTooBroad,
  type PeerAnswer,
  type PeerQuery,
  QUERY_TIMEOUT_MS,
  ROW_LIMIT,
  type Unit,
} from '../queries/peer-metrics.ts';
import { ATTEMPT_STATUSES } from '../queries/views.ts';
import { namesFor, type TypeNames } from '../type-names.ts';
import { manyQueryDocs, Problems, type Query, timeValue } from './attempts.ts';
import { existingTenant, multi, type TenantReq } from './common.ts';
import type { TenantCheck } from './deps.ts';

export type MetricsKind = 'attempts' | 'events';

const ALLOWED = {
  attempts: { measures: ATTEMPT_MEASURES as readonly string[], dimensions: ATTEMPT_DIMENSIONS as readonly string[] },
  events: { measures: EVENT_MEASURES as readonly string[], dimensions: EVENT_DIMENSIONS as readonly string[] },
} as const;

/** Whether a query key belongs to this form (its list forms too: measures[], dimensions[0]). */
const PEER_KEY = /^(measures|dimensions)(\[\d*\])?$|^time(\[.*)?$|^granularity$|^filters(\[.*)?$/;
export const isPeerForm = (q: Query): boolean => Object.keys(q).some((k) => PEER_KEY.test(k));

// ---------------------------------------------------------------------------------------------
// Documentation: the route schema lists these beside our form's parameters.

const peerFilterDocs = (kind: MetricsKind) => {
  const values: Record<string, readonly string[] | undefined> = {
    destination_type: INPUT_TYPE_NAMES,
    status: ATTEMPT_STATUSES,
    manual: ['true', 'false'],
  };
  return Object.fromEntries(
    ALLOWED[kind].dimensions.map((d) => [
      `filters[${d}]`,
      manyQueryDocs(
        `Other service's form: only these values of ${d}${d === 'tenant_id' ? ' (a tenant token: its own tenant only)' : ''}${d === 'destination_type' ? " (either service's names)" : ''}.`,
        values[d],
      ),
    ]),
  );
};

/** The query parameters of the other service's form, for a route schema's `properties`. */
export function peerQueryDocs(kind: MetricsKind) {
  return {
    'time[start]': {
      type: 'string',
      format: 'date-time',
      description: "Other service's form (required in it): start of the range, inclusive, RFC 3339.",
    },
    'time[end]': {
      type: 'string',
      format: 'date-time',
      description: "Other service's form (required in it): end of the range, exclusive, RFC 3339; after time[start].",
    },
    granularity: {
      type: 'string',
      pattern: '^\\d+[smhdwM]$',
      description:
        "Other service's form: bucket width, <number><unit>: s (1-60), m (1-60), h (1-24), d (1-31), w (1-4, weeks from Sunday), M (1-12, calendar months). Absent: one row per dimension combination over the whole range.",
    },
    measures: manyQueryDocs(`Other service's form (required in it): what to compute, one or more.`, ALLOWED[kind].measures),
    dimensions: manyQueryDocs("Other service's form: split the rows by these (tenant_id: admin key only).", ALLOWED[kind].dimensions),
    ...peerFilterDocs(kind),
  } as const;
}

const nameMap = { type: 'object', additionalProperties: { type: 'string' } } as const;
/** The answer in the other service's form (its MetricsResponse). */
export const peerAnswerSchema = {
  type: 'object',
  required: ['data', 'metadata'],
  properties: {
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['dimensions', 'metrics'],
        properties: {
          time_bucket: { type: 'string', format: 'date-time', description: 'Start of the bucket; only with a granularity.' },
          dimensions: { ...nameMap, description: 'The dimensions asked for, as text (manual "true"/"false", attempt_number "2").' },
          metrics: { type: 'object', additionalProperties: { type: 'number' }, description: 'The measures asked for.' },
        },
      },
    },
    metadata: {
      type: 'object',
      required: ['query_time_ms', 'row_count', 'row_limit', 'truncated'],
      properties: {
        granularity: { type: 'string' },
        query_time_ms: { type: 'integer' },
        row_count: { type: 'integer' },
        row_limit: { type: 'integer' },
        truncated: { type: 'boolean', description: `More than row_limit (${ROW_LIMIT}) rows matched: the rest are left out.` },
      },
    },
  },
} as const;

// ---------------------------------------------------------------------------------------------
// Parsing.

const GRANULARITY = /^(\d+)([smhdwM])$/;
const GRANULARITY_MAX: Record<Unit, number> = { s: 60, m: 60, h: 24, d: 31, w: 4, M: 12 };
const DATE_ONLY = /^\d{4}-\d\d-\d\d$/;

function timeOf(q: Query, key: 'time[start]' | 'time[end]', p: Problems): { text: string; ms: number } | undefined {
  const v = q[key];
  if (v === undefined || v === '') {
    p.add(`query.${key}`, 'is required');
    return undefined;
  }
  if (typeof v !== 'string') {
    p.add(`query.${key}`, 'must be a single value');
    return undefined;
  }
  // The listings' time parser (offsets in UTC for Postgres, microseconds kept), a date-time only.
  const text = DATE_ONLY.test(v) ? undefined : timeValue(v);
  if (text === undefined) {
    p.add(`query.${key}`, 'must be an RFC 3339 date-time with an offset (2024-05-01T12:00:00Z)');
    return undefined;
  }
  return { text, ms: Date.parse(text) };
}

function granularityOf(q: Query, p: Problems): Granularity | undefined {
  const raw = q.granularity;
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') {
    p.add('query.granularity', 'must be a single value');
    return undefined;
  }
  const m = GRANULARITY.exec(raw);
  if (!m) {
    p.add('query.granularity', `"${raw}" must be <number><unit>, the unit one of s, m, h, d, w, M`);
    return undefined;
  }
  const value = Number(m[1]);
  const unit = m[2] as Unit;
  if (!(value >= 1 && value <= GRANULARITY_MAX[unit])) {
    p.add('query.granularity', `"${raw}": ${unit} must be from 1 to ${GRANULARITY_MAX[unit]}`);
    return undefined;
  }
  return { value, unit };
}

/** The values of one list parameter, each one of `allowed`, without repeats. */
function listOf(q: Query, name: string, allowed: readonly string[], p: Problems): string[] {
  const values = [...new Set(multi(q, name) ?? [])];
  for (const v of values) if (!allowed.includes(v)) p.add(`query.${name}`, `"${v}" is not one of ${allowed.join(', ')}`);
  return values;
}

/** filters[<dimension>] (also [] and [n] forms) by dimension; destination types as interface.md's names. */
function filtersOf(q: Query, kind: MetricsKind, p: Problems): Record<string, string[]> {
  const allowed = ALLOWED[kind].dimensions;
  const filters: Record<string, string[]> = {};
  for (const key of Object.keys(q)) {
    if (!key.startsWith('filters')) continue;
    const m = /^filters\[(\w+)\](?:\[\d*\])?$/.exec(key);
    const name = m?.[1];
    if (!name || !allowed.includes(name)) {
      p.add(`query.${key}`, `is not a filter of this route: filters[<name>] with a name among ${allowed.join(', ')}`);
      continue;
    }
    if (filters[name]) continue;
    const values = [...new Set(multi(q, `filters[${name}]`) ?? [])];
    if (!values.length) continue;
    const bad = (why: string) => p.add(`query.filters[${name}]`, why);
    if (name === 'status')
      for (const v of values)
        if (!(ATTEMPT_STATUSES as readonly string[]).includes(v)) bad(`"${v}" is not one of ${ATTEMPT_STATUSES.join(', ')}`);
    if (name === 'manual') for (const v of values) if (v !== 'true' && v !== 'false') bad(`"${v}" is not true or false`);
    if (name === 'attempt_number') for (const v of values) if (!/^[1-9]\d{0,8}$/.test(v)) bad(`"${v}" is not a positive integer`);
    if (name === 'destination_type') {
      const types: DestinationType[] = [];
      for (const v of values) {
        const t = canonicalType(v);
        if (t) types.push(t);
        else bad(`"${v}" is not a destination type`);
      }
      filters[name] = [...new Set(types)];
      continue;
    }
    filters[name] = values;
  }
  return filters;
}

/** The query in the other service's form, or 422 naming every problem (`ours`: our form's parameters, refused beside it). */
function parse(q: Query, kind: MetricsKind, ours: readonly string[]): PeerQuery {
  const p = new Problems();
  for (const key of Object.keys(q)) {
    const base = key.replace(/\[\d*\]$/, '');
    if (ours.includes(base))
      p.add(
        `query.${key}`,
        'is a parameter of the other query form: not with measures, time[start], time[end], granularity, dimensions or filters',
      );
    else if (key.startsWith('time') && key !== 'time[start]' && key !== 'time[end]')
      p.add(`query.${key}`, 'is not a parameter of this form: use time[start] and time[end]');
  }
  const start = timeOf(q, 'time[start]', p);
  const end = timeOf(q, 'time[end]', p);
  if (start && end && !(start.ms < end.ms)) p.add('query.time[start]', 'must be before time[end]');
  const granularity = granularityOf(q, p);
  if (start && end && granularity && start.ms < end.ms && !bucketsOf(start.ms, end.ms, granularity))
    p.add(
      'query.granularity',
      `the range holds more than ${MAX_BUCKETS} buckets of ${granularity.value}${granularity.unit}: use a coarser granularity or a shorter range`,
    );
  const measures = listOf(q, 'measures', ALLOWED[kind].measures, p);
  if (!measures.length && !p.list.some((x) => x.path === 'query.measures'))
    p.add('query.measures', `is required: one or more of ${ALLOWED[kind].measures.join(', ')}`);
  const dimensions = listOf(q, 'dimensions', ALLOWED[kind].dimensions, p);
  const filters = filtersOf(q, kind, p);
  p.throwIfAny();
  return {
    start: (start as { text: string }).text,
    end: (end as { text: string }).text,
    startMs: (start as { ms: number }).ms,
    endMs: (end as { ms: number }).ms,
    ...(granularity ? { granularity } : {}),
    measures,
    dimensions,
    filters,
  };
}

// ---------------------------------------------------------------------------------------------
// The handler.

export interface PeerMetricsDeps {
  tenants: TenantCheck;
  typeNames: TypeNames;
  run: (kind: MetricsKind, q: PeerQuery) => Promise<PeerAnswer>;
}

type Req = FastifyRequest<{ Params: { tenant_id?: string }; Querystring: Query }>;

/** Scopes the query to the tenants the caller may read (module header), or refuses it. */
async function scope(deps: PeerMetricsDeps, req: Req, q: PeerQuery): Promise<void> {
  const p = req.principal;
  const asked = q.filters.tenant_id;
  const pathTenant = req.params.tenant_id;
  const tenant = pathTenant ?? (p.kind === 'tenant' ? p.tenantId : undefined);
  if (tenant === undefined) return; // the admin key: every tenant, or those asked for
  await existingTenant(deps.tenants, req as unknown as TenantReq);
  if (asked && !(asked.length === 1 && asked[0] === tenant)) {
    if (p.kind === 'tenant') throw new AppError('FORBIDDEN', 'filters[tenant_id] does not match the authenticated tenant.');
    throw AppError.validation([{ path: 'query.filters[tenant_id]', message: `must be the tenant in the path (${tenant}) or absent` }]);
  }
  q.filters.tenant_id = [tenant];
}

/** Answers a request in the other service's form. */
export async function answerPeer(deps: PeerMetricsDeps, kind: MetricsKind, ours: readonly string[], req: Req, query: Query) {
  const p = req.principal;
  if (req.params.tenant_id !== undefined) requireTenantAccess(p, req.params.tenant_id);
  // Before the other checks, as the other service: a tenant token never splits by tenant.
  if (p.kind === 'tenant' && multi(query, 'dimensions')?.includes('tenant_id'))
    throw new AppError('FORBIDDEN', 'The tenant_id dimension is not allowed with a tenant token.');
  const q = parse(query, kind, ours);
  await scope(deps, req, q);
  let res: PeerAnswer;
  try {
    res = await deps.run(kind, q);
  } catch (err) {
    if (!(err instanceof MetricsTooBroad)) throw err;
    throw new AppError(
      'VALIDATION_FAILED',
      `The query is too broad (at most ${MAX_BUCKETS} buckets, ${MAX_POINTS} points, ${QUERY_TIMEOUT_MS / 1000} s): narrow it.`,
      [{ path: 'query', message: `${err.message}: use fewer dimensions, more filters, a shorter range or a coarser granularity` }],
    );
  }
  if (q.dimensions.includes('destination_type') && namesFor(deps.typeNames, req.headers['user-agent']) === 'outpost')
    for (const point of res.data) {
      const t = canonicalType(point.dimensions.destination_type);
      if (t) point.dimensions.destination_type = OUTPOST_TYPE_NAMES[t];
    }
  return res;
}
