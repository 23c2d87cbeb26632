/**
 * Input guards: what no route should have to think about. Before any route validates its input,
 * every path parameter, query key and value and JSON body is checked for what can never be stored
 * or served (U+0000, lone surrogates, nesting past MAX_JSON_DEPTH; shared/src/events/storable.ts),
 * path ids keep to the documented id alphabet, a query key the operation does not know (or one
 * nested like `a[x][y]`) is refused instead of ignored, and so is a body where the operation takes
 * none: 422 with the field path, nothing changed. (Bodies are typed as sent: validators.ts.)
 * Router-level failures (a path that is not UTF-8 once decoded, an over-long path segment) get the
 * documented error shape too (frameworkErrors).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorBody, type Problem } from '@switchyard/shared/errors.ts';
import { badString, ID_RULE, isValidId, unstorable } from '@switchyard/shared/events/storable.ts';

/** Path parameters that name a tenant, destination or event, held to ID_PATTERN. */
const ID_PARAMS = new Set(['tenant_id', 'destination_id', 'event_id']);

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route checks its body itself, item by item (batch publish). */
    ownBodyChecks?: boolean;
  }
}

function paramProblems(params: unknown): Problem[] {
  const problems: Problem[] = [];
  if (params === null || typeof params !== 'object') return problems;
  for (const [k, v] of Object.entries(params)) {
    if (typeof v !== 'string' || v === '') continue;
    const why = badString(v);
    if (why) problems.push({ path: `params.${k}`, message: why });
    else if (ID_PARAMS.has(k) && !isValidId(v)) problems.push({ path: `params.${k}`, message: ID_RULE });
  }
  return problems;
}

/**
 * Whether a query key names a parameter the route documents: the key itself (`time[gte]`), or the
 * parameter it lists (`x`, `x[]`, `x[3]` for `x`; `filters[x][]`, `filters[x][3]` for a documented
 * `filters[x]` that takes a list). A parameter documented with operators (`time[gte]`) also lets
 * `time` and `time[other]` through: the route says what is wrong with them.
 * Anything else with brackets (`event_id[x]`, `a[x][y]`) names nothing.
 */
function knownKey(key: string, known: Record<string, unknown>): boolean {
  if (Object.hasOwn(known, key)) return true;
  // A documented bracketed parameter that takes several values (`filters[topic]`) takes them as
  // `filters[topic][]` and `filters[topic][0]` too.
  const listed = /^(.+\])\[\d*\]$/.exec(key)?.[1];
  if (listed !== undefined && Object.hasOwn(known, listed) && takesList(known[listed])) return true;
  const m = /^([^[\]]+)(?:\[(\w*)\])?$/.exec(key);
  if (!m) return false;
  const name = m[1] as string;
  const inner = m[2];
  if ((inner === undefined || inner === '' || /^\d+$/.test(inner)) && Object.hasOwn(known, name)) return true;
  return Object.keys(known).some((k) => k.startsWith(`${name}[`));
}

/** Whether a documented parameter's schema admits an array (manyQueryDocs: a value or a list). */
function takesList(schema: unknown): boolean {
  const s = schema as { type?: unknown; anyOf?: Array<{ type?: unknown }> } | undefined;
  return s?.type === 'array' || Boolean(s?.anyOf?.some((x) => x.type === 'array'));
}

function queryProblems(query: unknown, known: Record<string, unknown> | undefined): Problem[] {
  const problems: Problem[] = [];
  if (query === null || typeof query !== 'object') return problems;
  for (const [k, v] of Object.entries(query)) {
    const keyWhy = badString(k);
    if (keyWhy) {
      problems.push({ path: `query[${JSON.stringify(k)}]`, message: `name ${keyWhy}` });
      continue;
    }
    if (known && !knownKey(k, known)) {
      problems.push({ path: `query.${k}`, message: 'is not a parameter of this route' });
      continue;
    }
    // `limit[]=5` names limit, but the route reads `limit` alone: refused, not ignored.
    const listed = /^([^[\]]+)\[\d*\]$/.exec(k)?.[1];
    if (known && listed !== undefined && Object.hasOwn(known, listed) && !takesList(known[listed])) {
      problems.push({ path: `query.${listed}`, message: 'must be a single value' });
      continue;
    }
    for (const x of Array.isArray(v) ? v : [v]) {
      const why = typeof x === 'string' ? badString(x) : null;
      if (why) {
        problems.push({ path: `query.${k}`, message: why });
        break;
      }
    }
  }
  return problems;
}

/** A body sent to an operation that takes none: only no body, or `{}`, says nothing it ignores. */
function unwantedBody(body: unknown): Problem | null {
  if (body === undefined) return null;
  if (body !== null && typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0) return null;
  return { path: 'body', message: 'must be left out (or {}): this operation takes no body' };
}

export function registerInputGuards(app: FastifyInstance): void {
  app.addHook('preValidation', async (req: FastifyRequest) => {
    const schema = req.routeOptions.schema as
      | { querystring?: { properties?: Record<string, unknown> }; body?: unknown; hide?: boolean }
      | undefined;
    // An API operation (one the document lists) knows its query parameters and whether it takes a
    // body; pages and probes (hidden: the portal's `?token=`) are left to take what they are sent.
    const operation = schema !== undefined && !schema.hide && req.routeOptions.url !== undefined;
    const known = schema?.querystring?.properties ?? (operation ? {} : undefined);
    const problems = [...paramProblems(req.params), ...queryProblems(req.query, known)];
    if (!req.routeOptions.config?.ownBodyChecks && req.body !== undefined) {
      const bad = unstorable(req.body, 'body');
      if (bad) problems.push(bad);
    }
    const unwanted = operation && schema.body === undefined ? unwantedBody(req.body) : null;
    if (unwanted) problems.push(unwanted);
    if (problems.length) throw AppError.validation(problems);
  });
}

/** Fastify's `frameworkErrors` option: errors raised by the router, before any route or hook runs. */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  const appErr =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? AppError.validation([{ path: 'params', message: 'a path segment is longer than 256 characters' }])
      : err.code === 'FST_ERR_BAD_URL'
        ? new AppError('BAD_REQUEST', 'The path is not valid percent-encoded UTF-8.')
        : new AppError('BAD_REQUEST');
  void reply.status(appErr.status).send(errorBody(appErr));
}
