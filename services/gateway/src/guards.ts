/**
 * Input guards: what no route should have to think about. Before any route validates its input,
 * every path parameter, query key and value and JSON body is checked for what can never be stored
 * or served (U+0000, lone surrogates, nesting past MAX_JSON_DEPTH; shared/src/events/storable.ts),
 * path ids keep to the documented id alphabet, and a query key the route does not know (or one
 * nested like `a[x][y]`) is refused instead of ignored: 422 with the field path, nothing changed.
 * Metadata values must be strings as sent (never a number or null turned into text).
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
    /**
     * Body members that map names to strings (metadata): their values are checked as sent, since
     * the schema validator coerces scalars (5 to "5", null to ""). `nullable`: null values too (a
     * merge patch's removal).
     */
    stringMaps?: { members: readonly string[]; nullable?: boolean };
    /**
     * Body members its schema types as scalars (string, boolean, integer, number, or null) are
     * checked as sent: the schema validator would coerce them (true to 1, "60" to 60, ["a"] to "a").
     */
    scalarsAsSent?: boolean;
  }
}

/** What a JSON value is, for a message: `null`, `a number`, `an array`. */
export const kindOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;

const SCALAR_WORDS: Record<string, string> = {
  string: 'a string',
  boolean: 'a boolean',
  integer: 'an integer',
  number: 'a number',
  null: 'null',
};

/** A body schema's members typed as scalars, with their types: read once per schema (a publish's is on the hot path). */
const scalarMembersOf = new WeakMap<object, Array<[string, string[]]>>();
function scalarMembers(properties: Record<string, { type?: unknown }>): Array<[string, string[]]> {
  let members = scalarMembersOf.get(properties);
  if (!members) {
    members = Object.entries(properties).flatMap(([member, schema]): Array<[string, string[]]> => {
      const types = typeof schema.type === 'string' ? [schema.type] : Array.isArray(schema.type) ? (schema.type as string[]) : [];
      return types.length && types.every((t) => t in SCALAR_WORDS) ? [[member, types]] : [];
    });
    scalarMembersOf.set(properties, members);
  }
  return members;
}

/** Members of `body` whose value as sent is not of the scalar type(s) their schema names. */
function scalarProblems(body: unknown, properties: Record<string, { type?: unknown }>): Problem[] {
  const problems: Problem[] = [];
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return problems;
  for (const [member, types] of scalarMembers(properties)) {
    const value = (body as Record<string, unknown>)[member];
    if (value === undefined) continue;
    const kind = value === null ? 'null' : typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'number') : typeof value;
    if (types.includes(kind) || (kind === 'integer' && types.includes('number'))) continue;
    problems.push({ path: `body.${member}`, message: `must be ${types.map((t) => SCALAR_WORDS[t]).join(' or ')}, not ${kindOf(value)}` });
  }
  return problems;
}

/** The properties of a route's body schema, through a shared model's `$ref` (openapi.ts `ref`). */
function bodyProperties(req: FastifyRequest): Record<string, { type?: unknown }> | undefined {
  const body = (req.routeOptions.schema as { body?: { $ref?: string; properties?: object } } | undefined)?.body;
  const schema = body?.$ref ? (req.server.getSchema(body.$ref.replace(/#$/, '')) as { properties?: object } | undefined) : body;
  return schema?.properties as Record<string, { type?: unknown }> | undefined;
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

/** Values of the string maps in `body` that are not strings (nor null, when allowed), as sent. */
function stringMapProblems(body: unknown, rule: { members: readonly string[]; nullable?: boolean }): Problem[] {
  const problems: Problem[] = [];
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return problems;
  for (const member of rule.members) {
    const map = (body as Record<string, unknown>)[member];
    if (map === null || typeof map !== 'object' || Array.isArray(map)) continue; // the schema says what is wrong
    for (const [k, v] of Object.entries(map)) {
      if (typeof v === 'string' || (v === null && rule.nullable)) continue;
      problems.push({ path: `body.${member}.${k}`, message: `must be a string${rule.nullable ? ' or null' : ''}, not ${kindOf(v)}` });
    }
  }
  return problems;
}

export function registerInputGuards(app: FastifyInstance): void {
  app.addHook('preValidation', async (req: FastifyRequest) => {
    const schema = req.routeOptions.schema as { querystring?: { properties?: Record<string, unknown> } } | undefined;
    const problems = [...paramProblems(req.params), ...queryProblems(req.query, schema?.querystring?.properties)];
    if (!req.routeOptions.config?.ownBodyChecks && req.body !== undefined) {
      const bad = unstorable(req.body, 'body');
      if (bad) problems.push(bad);
    }
    const stringMaps = req.routeOptions.config?.stringMaps;
    if (stringMaps) problems.push(...stringMapProblems(req.body, stringMaps));
    if (req.routeOptions.config?.scalarsAsSent) {
      const properties = bodyProperties(req);
      if (properties) problems.push(...scalarProblems(req.body, properties));
    }
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
