// The e2e suites talk to the gateway through @switchyard/client, and every answer they get is
// checked against the OpenAPI document the gateway serves: `openapi.problems` must stay
// empty, which each suite asserts at its end.
import { createSwitchyardClient, type SwitchyardClient } from '@switchyard/client';
import { type OpenApiChecker, openApiChecker } from '@switchyard/shared/testing/openapi.ts';

export interface E2eClient {
  /** The typed client (openapi-fetch over the generated types). */
  api: SwitchyardClient;
  /** The same client for a path built at run time: `call('GET', '/api/v1/attempts?limit=5')`. */
  call<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** Every answer so far, checked against the served document. */
  openapi: OpenApiChecker;
}

const checkers = new Map<string, Promise<OpenApiChecker>>();

/** A client of the gateway at `baseUrl`; clients of one gateway share one checker. */
export async function e2eClient(baseUrl: string, token: string): Promise<E2eClient> {
  let checker = checkers.get(baseUrl);
  if (!checker) {
    checker = fetch(`${baseUrl}/api/v1/openapi.json`).then(async (r) =>
      openApiChecker((await r.json()) as Parameters<typeof openApiChecker>[0]),
    );
    checkers.set(baseUrl, checker);
  }
  const openapi = await checker;
  const checkedFetch = async (req: Request): Promise<Response> => {
    const res = await fetch(req);
    const text = await res.clone().text();
    openapi.check(req.method, req.url, res.status, text ? JSON.parse(text) : undefined);
    return res;
  };
  const api = createSwitchyardClient({ baseUrl, token, fetch: checkedFetch });
  const call = async <T>(method: string, path: string, body?: unknown) => {
    // A path known only at run time has no static type.
    const r = await (api.request as any)(method.toLowerCase(), path, body === undefined ? {} : { body });
    return { status: r.response.status as number, body: (r.data ?? r.error) as T };
  };
  return { api, call, openapi };
}
