// A small typed fetch layer over the gateway API (/api/v1, same origin), called with the tenant
// token: the tenant is implied by the token, so paths carry no tenant id. A 401 ends the session.

export type DestinationType = string;

export interface Destination {
  id: string;
  tenant_id: string;
  type: DestinationType;
  topics: string[] | '*';
  config: Record<string, unknown>;
  credentials: Record<string, unknown>;
  disabled_at: string | null;
  created_at: string;
  updated_at?: string;
  target?: string;
  target_url?: string;
  filter?: Record<string, unknown> | null;
  delivery_metadata?: Record<string, string>;
  metadata?: Record<string, string>;
}

export interface FieldDescriptor {
  key: string;
  type: 'text' | 'checkbox' | 'key_value_map' | 'select';
  label: string;
  description?: string;
  required?: boolean;
  sensitive?: boolean;
  default?: string;
  minlength?: number;
  maxlength?: number;
  pattern?: string;
  options?: { label: string; value: string }[];
}

export interface TypeSchema {
  type: DestinationType;
  label: string;
  description: string;
  icon: string;
  instructions: string;
  remote_setup_url?: string;
  config_fields: FieldDescriptor[];
  credential_fields: FieldDescriptor[];
}

export interface Attempt {
  id: string;
  tenant_id: string;
  destination_id: string;
  event_id: string;
  topic: string;
  status: 'success' | 'failed';
  code: string;
  response_data: Record<string, unknown> | null;
  attempt_number: number;
  manual: boolean;
  duration_ms: number | null;
  time: string;
  event?: EventItem | null;
}

export interface EventItem {
  id: string;
  topic: string;
  time: string;
  destination_id: string | null;
  eligible_for_retry: boolean;
  metadata: Record<string, unknown> | null;
  data?: unknown;
  successful_at: string | null;
  status?: string;
}

export interface Page<T> {
  models: T[];
  pagination: { next: string | null; prev: string | null; limit: number; dir: string; order_by: string };
}

export interface Problem {
  path: string;
  message: string;
}

/** An error answer of the API, in its one shape {status, message, data}. */
export class ApiError extends Error {
  readonly status: number;
  readonly problems: Problem[];
  constructor(status: number, message: string, problems: Problem[] = []) {
    super(message);
    this.status = status;
    this.problems = problems;
  }
}

let token = '';
let onUnauthorized: () => void = () => undefined;

export function configureApi(t: string, unauthorized: () => void): void {
  token = t;
  onUnauthorized = unauthorized;
}

type Query = Record<string, string | number | undefined | null>;

export function queryString(q: Query = {}): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    if (res.status === 401) onUnauthorized();
    const e = (json ?? {}) as { message?: string; data?: unknown };
    const problems = Array.isArray(e.data) ? (e.data as Problem[]) : [];
    throw new ApiError(res.status, e.message ?? `The request failed (${res.status}).`, problems);
  }
  return json as T;
}

const enc = encodeURIComponent;

export const api = {
  destinationTypes: () => request<TypeSchema[]>('GET', '/destination-types'),
  topics: () => request<string[]>('GET', '/topics'),
  destinations: () => request<Destination[]>('GET', '/destinations'),
  destination: (id: string) => request<Destination>('GET', `/destinations/${enc(id)}`),
  createDestination: (body: Record<string, unknown>) => request<Destination>('POST', '/destinations', body),
  updateDestination: (id: string, body: Record<string, unknown>) => request<Destination>('PATCH', `/destinations/${enc(id)}`, body),
  setEnabled: (id: string, enabled: boolean) => request<Destination>('PUT', `/destinations/${enc(id)}/${enabled ? 'enable' : 'disable'}`),
  deleteDestination: (id: string) => request<{ success: boolean }>('DELETE', `/destinations/${enc(id)}`),
  attempts: (destinationId: string, q: Query) =>
    request<Page<Attempt>>('GET', `/destinations/${enc(destinationId)}/attempts${queryString(q)}`),
  attempt: (destinationId: string, attemptId: string) =>
    request<Attempt>('GET', `/destinations/${enc(destinationId)}/attempts/${enc(attemptId)}?include=event.data`),
  events: (destinationId: string, q: Query) =>
    request<Page<EventItem>>('GET', `/destination/${enc(destinationId)}/events${queryString(q)}`),
  retry: (eventId: string, destinationId: string) =>
    request<{ success: boolean }>('POST', '/retry', { event_id: eventId, destination_id: destinationId }),
};
