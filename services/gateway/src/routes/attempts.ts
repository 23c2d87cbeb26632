import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, type Problem } from '@switchyard/shared/errors.ts';
import { type Dir, type ListPage, pageProblems } from '@switchyard/shared/db/paging.ts';
import { isRealDateTime, isStorableMs } from '@switchyard/shared/time.ts';
import type { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { canonicalType, INPUT_TYPE_NAMES } from '@switchyard/shared/destinations/registry.ts';
import type { DestinationType } from '@switchyard/shared/model/index.ts';
import { ID_RULE, isValidId } from '@switchyard/shared/events/storable.ts';
import type { QueryStore } from '../queries/store.ts';
import { ATTEMPT_STATUSES, type AttemptView, type Tenants, type TimeRange } from '../queries/views.ts';
import { requireTenantAccess } from '../auth.ts';
import type { TenantCheck } from './deps.ts';
import { destinationView } from '../destination-view.ts';
import { existingDestination, existingTenant, idParam, multi, type TenantReq } from './common.ts';
import { answers } from '../openapi.ts';

// ---------------------------------------------------------------------------------------------
// Query parameters of the event and attempt listings. They are checked here rather than by the
// route schema (which documents them) so that one 422 names every problem at once, and so that
// the multi-value forms (x=a&x=b, x[]=a, x[0]=a, x=a,b) and time[gte] style keys parse alike.

export type Query = Record<string, unknown>;

/** Route options shared by these routes: the schema documents, the handler validates. */
export const documentedOnly = { validatorCompiler: () => () => true } as const;

const dateTime = { type: 'string', format: 'date-time' } as const;

export const pageQueryDocs = {
  limit: {
    type: 'integer',
    minimum: 1,
    maximum: 1000,
    default: 100,
    description:
      'Page size: the most items a page holds. A page that carries events (event listings; include=event or include=event.data) also ends once their payloads (with include=event: their metadata) reach the configured byte bound, so it may hold fewer: follow next.',
  },
  next: { type: 'string', description: 'Cursor of the next page (from pagination.next).' },
  prev: { type: 'string', description: 'Cursor of the previous page (from pagination.prev); not with next.' },
  order_by: { type: 'string', enum: ['time'], default: 'time' },
  dir: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
} as const;

export const timeQueryDocs = {
  'time[gte]': dateTime,
  'time[gt]': dateTime,
  'time[lte]': dateTime,
  'time[lt]': dateTime,
} as const;

/** A query parameter that takes one value or several (x=a&x=b, x[]=a, x[0]=a, x=a,b), from `values` when given. */
export const manyQueryDocs = (description: string, values?: readonly string[]) => {
  const one = values ? { type: 'string', enum: [...values] } : { type: 'string' };
  return { anyOf: [one, { type: 'array', items: one }], description: `${description} Several values match any.` } as const;
};
export const statusQueryDocs = manyQueryDocs(
  'success or failed; canceled: the failed attempts that ended without a request (response_data.reason says why).',
  ATTEMPT_STATUSES,
);

export class Problems {
  readonly list: Problem[] = [];
  add(path: string, message: string): void {
    this.list.push({ path, message });
  }
  throwIfAny(): void {
    if (this.list.length) throw AppError.validation(this.list);
  }
}

function single(q: Query, name: string, p: Problems): string | undefined {
  const v = q[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') {
    p.add(`query.${name}`, 'must be a single value');
    return undefined;
  }
  return v;
}

const DATE = /^(\d{4})-(\d\d)-(\d\d)$/;
const DATE_TIME = /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d)(?::(\d\d)(\.\d{1,9})?)?(?:[Zz]|[+-](\d\d)(?::?(\d\d))?)$/;

/**
 * Whether the fields of a DATE or DATE_TIME match name a real day and time (isRealDateTime). Years
 * are 0001 to 9999: the four digits RFC 3339 writes, and AD only (Postgres has no year 0, and we
 * take no BC suffix); a bound that an offset carries past them is refused in timeValue. Offsets up
 * to ±23:59, as RFC 3339 allows; no leap second (:60).
 */
function isRealTime(m: RegExpExecArray): boolean {
  const n = (i: number) => Number(m[i] ?? 0);
  return isRealDateTime(n(1), n(2), n(3), n(4), n(5), n(6)) && n(8) <= 23 && n(9) <= 59;
}

/** An RFC 3339 date-time with its offset, or a date (UTC midnight); as text, so microseconds survive. */
export function timeValue(raw: string): string | undefined {
  const date = DATE.exec(raw);
  if (date) return isRealTime(date) ? `${raw}T00:00:00Z` : undefined;
  const m = DATE_TIME.exec(raw);
  if (!m || !isRealTime(m)) return undefined;
  const js = raw
    .replace(' ', 'T')
    .replace(/\.(\d{3})\d+/, '.$1')
    .replace(/([+-]\d\d)(\d\d)$/, '$1:$2')
    .replace(/([+-]\d\d)$/, '$1:00');
  const d = new Date(js);
  if (Number.isNaN(d.getTime())) return undefined;
  if (/[Zz]$/.test(raw)) return raw;
  // RFC 3339 allows offsets up to ±23:59, Postgres only up to ±15:59: the bound goes in as UTC.
  // Offsets are whole minutes, so the fraction as written (microseconds too) still holds.
  if (!isStorableMs(d.getTime())) return undefined;
  const iso = d.toISOString();
  const frac = /:\d\d\.(\d+)/.exec(raw)?.[1];
  return frac ? iso.replace(/\.\d{3}Z$/, `.${frac}Z`) : iso;
}

export function parseTime(q: Query, p: Problems): TimeRange {
  const t: TimeRange = {};
  for (const [key, value] of Object.entries(q)) {
    if (key === 'time') {
      p.add('query.time', 'needs a bound: time[gte], time[gt], time[lte] or time[lt]');
      continue;
    }
    const m = /^time\[(\w*)\]$/.exec(key);
    if (!m) continue;
    const op = m[1] as string;
    if (op !== 'gte' && op !== 'gt' && op !== 'lte' && op !== 'lt') {
      p.add(`query.${key}`, 'is not a time bound: use gte, gt, lte or lt');
      continue;
    }
    if (typeof value !== 'string') {
      p.add(`query.${key}`, 'must be a single value');
      continue;
    }
    const v = timeValue(value);
    if (v === undefined) p.add(`query.${key}`, 'must be an ISO 8601 date-time with an offset (2024-05-01T12:00:00Z) or a date');
    else t[op] = v;
  }
  return t;
}

export function parsePage(q: Query, p: Problems, kind: 'att' | 'evt'): ListPage {
  const page: ListPage = { limit: 100 };
  const limit = single(q, 'limit', p);
  if (limit !== undefined) {
    const n = /^\d{1,7}$/.test(limit) ? Number(limit) : Number.NaN;
    if (!(n >= 1 && n <= 1000)) p.add('query.limit', 'must be an integer from 1 to 1000');
    else page.limit = n;
  }
  const dir = single(q, 'dir', p);
  if (dir !== undefined) {
    if (dir !== 'asc' && dir !== 'desc') p.add('query.dir', 'must be one of asc, desc');
    else page.dir = dir as Dir;
  }
  const orderBy = single(q, 'order_by', p);
  if (orderBy !== undefined && orderBy !== 'time') p.add('query.order_by', 'must be time');
  const next = single(q, 'next', p);
  const prev = single(q, 'prev', p);
  if (next !== undefined) page.next = next;
  if (prev !== undefined) page.prev = prev;
  for (const x of pageProblems(page, kind)) p.add(x.path, x.message);
  return page;
}

/** The `status` values given, each one of `allowed`. */
export function parseStatuses<S extends string>(q: Query, p: Problems, allowed: readonly S[]): S[] | undefined {
  const values = multi(q, 'status');
  for (const v of values ?? []) {
    if (!(allowed as readonly string[]).includes(v)) p.add('query.status', `must be one of ${allowed.join(', ')} (got "${v}")`);
  }
  return values as S[] | undefined;
}

/** Ids given in `name` (multi-value), each held to the id rule: one that breaks it can name nothing. */
export function parseIds(q: Query, name: string, p: Problems): string[] | undefined {
  const values = multi(q, name);
  for (const v of values ?? []) if (!isValidId(v)) p.add(`query.${name}`, `${ID_RULE} (got "${v}")`);
  return values && [...new Set(values)];
}

/** The `destination_type` values given, by either service's names, as interface.md's names. */
function parseDestinationTypes(q: Query, p: Problems): DestinationType[] | undefined {
  const values = multi(q, 'destination_type')?.map((t) => {
    const canonical = canonicalType(t);
    if (!canonical) p.add('query.destination_type', `"${t}" is not a destination type`);
    return canonical;
  });
  return values && [...new Set(values.filter((t): t is DestinationType => t !== undefined))];
}

const INCLUDES = ['event', 'event.data', 'response_data', 'destination'] as const;
export type Include = (typeof INCLUDES)[number];

export function parseInclude(q: Query, p: Problems): Set<Include> {
  const values = multi(q, 'include') ?? [];
  for (const v of values)
    if (!(INCLUDES as readonly string[]).includes(v)) p.add('query.include', `must be among ${INCLUDES.join(', ')} (got "${v}")`);
  return new Set(values as Include[]);
}

const includeDocs = manyQueryDocs(
  'Expansions: event (the event without data), event.data (with data), destination, response_data (always present; accepted for compatibility).',
  INCLUDES,
);

/**
 * The tenants a request may read. A tenant in the path (either path form) must exist and be the
 * token's own; without one, a tenant token reads its own tenant and the admin key reads every
 * tenant, narrowed by the `tenant_id` query parameter when given.
 */
export async function readableTenants(tenants: TenantCheck, req: FastifyRequest): Promise<Tenants> {
  const r = req as TenantReq;
  const asked = multi(req.query as Query, 'tenant_id');
  const inPath = r.params.tenant_id;
  if (inPath !== undefined) {
    // Beside a tenant in the path, `tenant_id` may only name it again: another is refused, not ignored.
    for (const t of asked ?? []) requireTenantAccess(req.principal, t);
    const other = asked?.find((t) => t !== inPath);
    if (other !== undefined)
      throw AppError.validation([{ path: 'query.tenant_id', message: `must be the tenant of the path (${inPath}), not ${other}` }]);
    return [await existingTenant(tenants, r)];
  }
  if (req.principal.kind === 'tenant') {
    for (const t of asked ?? []) requireTenantAccess(req.principal, t);
    return [await existingTenant(tenants, r)];
  }
  return asked ?? null;
}

/** What a page of attempts embeds of their events, for the store to bound the page by its bytes. */
function embedOf(include: Set<Include>): 'event' | 'event.data' | undefined {
  if (include.has('event.data')) return 'event.data';
  return include.has('event') ? 'event' : undefined;
}

/**
 * include=event / event.data / destination, applied to a page of attempts. A listed page must have
 * been listed with `embedOf(include)`, which ends it at the byte bound before any payload is loaded.
 */
export async function expandAttempts(
  destinations: Pick<DestinationStore, 'get'>,
  queries: QueryStore,
  attempts: AttemptView[],
  include: Set<Include>,
): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = attempts.map((a) => ({ ...a }));
  const withData = include.has('event.data');
  if (withData || include.has('event')) {
    const events = await queries.eventsOf(attempts, withData);
    out.forEach((o, i) => {
      const a = attempts[i] as AttemptView;
      const event = events.get(`${a.tenant_id}\u0000${a.event_id}`);
      if (event) o.event = event;
    });
  }
  if (include.has('destination')) {
    const views = new Map<string, Record<string, unknown> | null>();
    for (const a of attempts) {
      const k = `${a.tenant_id}\u0000${a.destination_id}`;
      if (views.has(k)) continue;
      const d = await destinations.get(a.tenant_id, a.destination_id);
      views.set(k, d ? destinationView(d) : null);
    }
    out.forEach((o, i) => {
      const a = attempts[i] as AttemptView;
      // A deleted destination is left out rather than sent as null.
      const view = views.get(`${a.tenant_id}\u0000${a.destination_id}`);
      if (view) o.destination = view;
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

const attemptListQuery = {
  type: 'object',
  properties: {
    event_id: manyQueryDocs('Attempts of these events.'),
    status: statusQueryDocs,
    topic: manyQueryDocs('Attempts of events of these topics.'),
    ...timeQueryDocs,
    include: includeDocs,
    ...pageQueryDocs,
  },
} as const;

const adminAttemptListQuery = {
  type: 'object',
  properties: {
    ...attemptListQuery.properties,
    tenant_id: manyQueryDocs('Admin key only: attempts of these tenants (a tenant token may only name its own).'),
    destination_id: manyQueryDocs('Attempts to these destinations.'),
    destination_type: manyQueryDocs(
      "Attempts to destinations of these types (either service's names); a deleted destination's attempts match none.",
      INPUT_TYPE_NAMES,
    ),
  },
} as const;

const attemptIdParams = { type: 'object', properties: { tenant_id: idParam, destination_id: idParam, attempt_id: idParam } } as const;
const includeQuery = { type: 'object', properties: { include: includeDocs } } as const;
const adminIncludeQuery = {
  type: 'object',
  properties: {
    include: includeDocs,
    tenant_id: manyQueryDocs('Admin key only, without a tenant in the path: the attempt of these tenants.'),
  },
} as const;

type Req = FastifyRequest<{ Params: { tenant_id?: string; destination_id?: string; attempt_id?: string }; Querystring: Query }>;

export interface AttemptRouteDeps {
  tenants: TenantCheck;
  /** For include=destination. */
  destinations: Pick<DestinationStore, 'get'>;
  queries: QueryStore;
}

/**
 * The filters, page and includes of an attempt listing; 422 naming every bad parameter. A listing
 * not scoped to one destination also filters by destination type.
 */
function listParams(q: Query, scope: 'destination' | 'tenant') {
  const p = new Problems();
  const page = parsePage(q, p, 'att');
  const time = parseTime(q, p);
  const statuses = parseStatuses(q, p, ATTEMPT_STATUSES);
  const include = parseInclude(q, p);
  const destinationTypes = scope === 'tenant' ? parseDestinationTypes(q, p) : undefined;
  p.throwIfAny();
  return { page, time, statuses, include, destinationTypes, eventIds: multi(q, 'event_id'), topics: multi(q, 'topic') };
}

/** The attempts of one destination: listed and one. */
function destinationAttemptRoutes(app: FastifyInstance, deps: AttemptRouteDeps) {
  const { queries } = deps;
  app.get(
    '/destinations/:destination_id/attempts',
    {
      ...documentedOnly,
      schema: {
        tags: ['attempts'],
        summary: 'List the attempts of a destination, newest first, cursor-paged',
        params: { type: 'object', properties: { tenant_id: idParam, destination_id: idParam } },
        querystring: attemptListQuery,
        response: answers({ 200: 'AttemptPage' }),
      },
    },
    async (req: Req) => {
      const { page, include, ...f } = listParams(req.query, 'destination');
      const { tenantId, destinationId } = await existingDestination(queries, req as unknown as TenantReq);
      const res = await queries.listAttempts({ ...f, tenants: [tenantId], destinationIds: [destinationId] }, page, {
        embed: embedOf(include),
      });
      return { models: await expandAttempts(deps.destinations, queries, res.models, include), pagination: res.pagination };
    },
  );

  app.get(
    '/destinations/:destination_id/attempts/:attempt_id',
    {
      ...documentedOnly,
      schema: {
        tags: ['attempts'],
        summary: 'Get one attempt of a destination',
        params: attemptIdParams,
        querystring: includeQuery,
        response: answers({ 200: 'Attempt' }),
      },
    },
    async (req: Req) => {
      const p = new Problems();
      const include = parseInclude(req.query, p);
      p.throwIfAny();
      const { tenantId, destinationId } = await existingDestination(queries, req as unknown as TenantReq);
      const a = await queries.getAttempt(req.params.attempt_id ?? '', { tenants: [tenantId], destinationId });
      if (!a) throw new AppError('ATTEMPT_NOT_FOUND');
      return (await expandAttempts(deps.destinations, queries, [a], include))[0];
    },
  );
}

/** The attempts of the tenant in the path or token (or, admin key, of every tenant): listed and one. */
function tenantAttemptRoutes(app: FastifyInstance, deps: AttemptRouteDeps) {
  const { queries } = deps;
  app.get(
    '/attempts',
    {
      ...documentedOnly,
      schema: {
        tags: ['attempts'],
        summary:
          'List attempts, newest first, cursor-paged: of the tenant in the path or token, or (admin key, no tenant in the path) of every tenant',
        params: { type: 'object', properties: { tenant_id: idParam } },
        querystring: adminAttemptListQuery,
        response: answers({ 200: 'AttemptPage' }),
      },
    },
    async (req: Req) => {
      const { page, include, ...f } = listParams(req.query, 'tenant');
      const tenants = await readableTenants(deps.tenants, req);
      const res = await queries.listAttempts({ ...f, tenants, destinationIds: multi(req.query, 'destination_id') }, page, {
        embed: embedOf(include),
      });
      return { models: await expandAttempts(deps.destinations, queries, res.models, include), pagination: res.pagination };
    },
  );

  app.get(
    '/attempts/:attempt_id',
    {
      ...documentedOnly,
      schema: {
        tags: ['attempts'],
        summary: 'Get one attempt (of the tenant in the path or token; any tenant with the admin key and no tenant in the path)',
        params: { type: 'object', properties: { tenant_id: idParam, attempt_id: idParam } },
        querystring: adminIncludeQuery,
        response: answers({ 200: 'Attempt' }),
      },
    },
    async (req: Req) => {
      const p = new Problems();
      const include = parseInclude(req.query, p);
      p.throwIfAny();
      const tenants = await readableTenants(deps.tenants, req);
      const a = await queries.getAttempt(req.params.attempt_id ?? '', { tenants });
      if (!a) throw new AppError('ATTEMPT_NOT_FOUND');
      return (await expandAttempts(deps.destinations, queries, [a], include))[0];
    },
  );
}

export function attemptRoutes(deps: AttemptRouteDeps) {
  return async (app: FastifyInstance) => {
    destinationAttemptRoutes(app, deps);
    tenantAttemptRoutes(app, deps);
  };
}
