/**
 * The browser-safe part of @switchyard/client (`@switchyard/client/client.ts`): the typed calls,
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
  readonly body: ApiErrorBody | undefined;
  constructor(status: number, body: ApiErrorBody | undefined) {
    super(
      body?.message ? `${status} ${body.code}: ${body.message}${body.data?.length ? ` (${body.data.join('; ')})` : ''}` : `HTTP ${status}`,
    );
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

/** The data of a successful answer (or of the call that will answer); an error answer throws ApiError. */
export async function ok<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }> | { data?: T; error?: unknown; response: Response },
): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ApiError(response.status, error as ApiErrorBody | undefined);
  return data as T;
}

export { items, pages, type Page } from './paging.ts';
