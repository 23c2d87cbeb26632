// The gateway API (/api/v1, same origin) through the typed client (@switchyard/client: paths,
// parameters, bodies and answers typed by the generated OpenAPI schema), called with the tenant
// token at each operation's canonical path (/api/v1/tenants/{tenant_id}/..., the token's tenant).
// A 401 ends the session, and so does a 404 of the tenant itself (the tenant was deleted).
// Imported from the client's browser-safe entry (its index also holds the node:crypto verifier).
import { type components, createSwitchyardClient, type SwitchyardClient } from '@switchyard/client/client.ts';

type Schemas = components['schemas'];
export type Destination = Schemas['Destination'];
export type TypeSchema = Schemas['DestinationTypeSchema'];
export type FieldDescriptor = TypeSchema['config_fields'][number];
export type Attempt = Schemas['Attempt'];
export type EventItem = Schemas['Event'];
export type Problem = NonNullable<Schemas['Error']['problems']>[number];
export interface Page<T> {
  models: T[];
  pagination: Schemas['Pagination'];
}

/** An error answer of the API, in its one shape {status, code, message, data?, problems?}. */
export class ApiError extends Error {
  readonly status: number;
  readonly problems: Problem[];
  constructor(status: number, message: string, problems: Problem[] = []) {
    super(message);
    this.status = status;
    this.problems = problems;
  }
}

let client: SwitchyardClient = createSwitchyardClient({ baseUrl: window.location.origin, token: '' });
let onEnded: (why: 'expired' | 'ended') => void = () => undefined;
let tenantId = '';

/** `ended`: the token was refused (`expired`), or its tenant is gone (`ended`); nothing more can be done with it. */
export function configureApi(token: string, tenant: string, ended: (why: 'expired' | 'ended') => void): void {
  client = createSwitchyardClient({ baseUrl: window.location.origin, token });
  tenantId = tenant;
  onEnded = ended;
}

/** The data of a successful answer; an error answer throws ApiError (after ending the session: see onEnded). */
async function data<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    const e = (typeof error === 'object' && error ? error : {}) as Partial<Schemas['Error']>;
    if (response.status === 401) onEnded('expired');
    else if (e.code === 'TENANT_NOT_FOUND') onEnded('ended');
    throw new ApiError(response.status, e.message ?? `The request failed (${response.status}).`, e.problems ?? []);
  }
  return data as T;
}

/** A listing's filters and cursor; an empty field ('') filters nothing. */
export type ListQuery = {
  status?: '' | Attempt['status'];
  topic?: string;
  'time[gte]'?: string;
  'time[lte]'?: string;
  limit?: number;
  next?: string;
  prev?: string;
};

/** The filters that are set. */
function set<Q extends object>(q: Q): { [K in keyof Q]: Exclude<Q[K], ''> } {
  return Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined && v !== null && v !== '')) as never;
}

const tenant = () => ({ params: { path: { tenant_id: tenantId } } });
const dest = (destination_id: string) => ({ params: { path: { tenant_id: tenantId, destination_id } } });

export const api = {
  destinationTypes: () => data(client.GET('/api/v1/destination-types')),
  topics: () => data(client.GET('/api/v1/topics')),
  destinations: () => data(client.GET('/api/v1/tenants/{tenant_id}/destinations', tenant())),
  destination: (id: string) => data(client.GET('/api/v1/tenants/{tenant_id}/destinations/{destination_id}', dest(id))),
  createDestination: (body: Schemas['DestinationCreate']) =>
    data(client.POST('/api/v1/tenants/{tenant_id}/destinations', { ...tenant(), body })),
  updateDestination: (id: string, body: Schemas['DestinationUpdate']) =>
    data(client.PATCH('/api/v1/tenants/{tenant_id}/destinations/{destination_id}', { ...dest(id), body })),
  setEnabled: (id: string, enabled: boolean) =>
    data(
      client.PUT(
        enabled
          ? '/api/v1/tenants/{tenant_id}/destinations/{destination_id}/enable'
          : '/api/v1/tenants/{tenant_id}/destinations/{destination_id}/disable',
        dest(id),
      ),
    ),
  destinationHealth: (id: string) => data(client.GET('/api/v1/tenants/{tenant_id}/destinations/{destination_id}/health', dest(id))),
  destinationOrder: (id: string) => data(client.GET('/api/v1/tenants/{tenant_id}/destinations/{destination_id}/order', dest(id))),
  deleteDestination: (id: string) => data(client.DELETE('/api/v1/tenants/{tenant_id}/destinations/{destination_id}', dest(id))),
  attempts: (destinationId: string, q: ListQuery): Promise<Page<Attempt>> =>
    data(
      client.GET('/api/v1/tenants/{tenant_id}/destinations/{destination_id}/attempts', {
        params: { path: { tenant_id: tenantId, destination_id: destinationId }, query: set(q) },
      }),
    ),
  attempt: (destinationId: string, attemptId: string) =>
    data(
      client.GET('/api/v1/tenants/{tenant_id}/destinations/{destination_id}/attempts/{attempt_id}', {
        params: { path: { tenant_id: tenantId, destination_id: destinationId, attempt_id: attemptId }, query: { include: 'event.data' } },
      }),
    ),
  events: (destinationId: string, q: ListQuery): Promise<Page<EventItem>> =>
    data(
      client.GET('/api/v1/tenants/{tenant_id}/destination/{destination_id}/events', {
        params: { path: { tenant_id: tenantId, destination_id: destinationId }, query: set(q) },
      }),
    ),
  /** Attempts of one destination per hour and status, from `start` to now (the tenant metrics API). */
  attemptCounts: async (destinationId: string, start: string): Promise<Schemas['MetricCounts']> =>
    // Asked in this API's own query form, so answered as MetricCounts (not the other service's shape).
    (await data(
      client.GET('/api/v1/metrics/attempts', {
        params: { query: { bucket: 'hour', start, destination_id: destinationId, group_by: 'status' } },
      }),
    )) as Schemas['MetricCounts'],
  retry: (eventId: string, destinationId: string) =>
    data(client.POST('/api/v1/retry', { body: { event_id: eventId, destination_id: destinationId } })),
};
