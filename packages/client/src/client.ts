/**
 * The browser-safe part of @switchyard/client (`@switchyard/client/client`): the typed calls,
 * `ok`, `ApiError`, the schema types and cursor paging, with no Node-only import, so a browser
 * bundle (the tenant portal) can use it. The package's index adds the webhook verifier (node:crypto).
 */
import createClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch';
import type { components, paths } from './generated/schema.ts';

export type { components, paths };
export type { Middleware };
type Schemas = components['schemas'];
export type Tenant = Schemas['Tenant'];
export type Destination = Schemas['Destination'];
export type DestinationCreate = Schemas['DestinationCreate'];
export type DestinationUpdate = Schemas['DestinationUpdate'];
export type Event = Schemas['Event'];
export type Attempt = Schemas['Attempt'];
export type Pagination = Schemas['Pagination'];
export type PublishRequest = Schemas['PublishRequest'];
export type PublishResult = Schemas['PublishResult'];
export type ApiErrorBody = Schemas['Error'];

export type SwitchyardClient = Client<paths>;

export interface SwitchyardClientOptions {
  /** The gateway, e.g. http://localhost:3333 (paths start with /api/v1). */
  baseUrl: string;
  /** The admin API key, or a tenant token (GET /api/v1/{tenant_id}/token). */
  token: string;
  /** A fetch of your own (tests, proxies); globalThis.fetch otherwise. */
  fetch?: ClientOptions['fetch'];
  middleware?: Middleware[];
}

export function createSwitchyardClient(opts: SwitchyardClientOptions): SwitchyardClient {
  const client = createClient<paths>({
    baseUrl: opts.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: `Bearer ${opts.token}` },
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  for (const m of opts.middleware ?? []) client.use(m);
  return client;
}

/** An error answer of the API, thrown by `ok`. */
export class ApiError extends Error {
  readonly status: number;
  /** The API's error body (docs/errors.md); undefined when the answer was not one (a proxy's page). */
  readonly body: ApiErrorBody | undefined;
  /** The answer's headers: `Retry-After` on a 429 or 503 (`retryAfterSeconds`). */
  readonly headers: Headers | undefined;
  constructor(status: number, body: ApiErrorBody | undefined, headers?: Headers) {
    super(
      body?.message ? `${status} ${body.code}: ${body.message}${body.data?.length ? ` (${body.data.join('; ')})` : ''}` : `HTTP ${status}`,
    );
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
    this.headers = headers;
  }

  /** How long `Retry-After` asks to wait before trying again, in seconds (either of its forms); undefined without one. */
  get retryAfterSeconds(): number | undefined {
    const value = this.headers?.get('retry-after')?.trim();
    if (!value) return undefined;
    if (/^\d+$/.test(value)) return Number(value);
    const at = Date.parse(value);
    return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
  }
}

/** The data of a successful answer (or of the call that will answer); an error answer throws ApiError. */
export async function ok<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }> | { data?: T; error?: unknown; response: Response },
): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    // A body in the error shape is an object with a code; anything else (text from a proxy) is none.
    const body = error !== null && typeof error === 'object' && 'code' in error ? (error as ApiErrorBody) : undefined;
    throw new ApiError(response.status, body, response.headers);
  }
  return data as T;
}

export { items, pages, type Page } from './paging.ts';
