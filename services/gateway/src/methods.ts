/**
 * 405 Method Not Allowed: a known path asked with a method none of its routes has is answered 405
 * `METHOD_NOT_ALLOWED` with an `Allow` header listing the methods it has (RFC 9110 15.5.6), in the
 * documented error shape; only a path no route has is 404 `NOT_FOUND`.
 *
 * Two ways a request can miss its path's methods:
 * - the router finds no route for the method (TRACE, or POST on a GET-only path): the not-found handler asks here;
 * - the tenant alias routes (`/api/v1/{tenant_id}...`) catch it with a fixed path's name as the tenant id
 *   (`DELETE /api/v1/topics`): a reserved id is never a tenant (RESERVED_TENANT_IDS), so the request
 *   addresses the fixed path, and is answered as such before authentication.
 *
 * Paths are matched against every route the app registered (the onRoute list, pages included), segment
 * by segment as the router does: case-sensitive, a trailing slash ignored, `:param` one segment, `*` the rest.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorBody } from '@switchyard/shared/errors.ts';

interface Pattern {
  method: string;
  segments: string[];
}

/** The methods `path` has among `patterns`, HEAD with GET; a tenant segment holding a reserved id matches nothing. */
function allowedMethods(patterns: readonly Pattern[], path: string, reserved: ReadonlySet<string>): string[] {
  const segs = splitPath(path);
  const out = new Set<string>();
  for (const p of patterns) if (matches(p.segments, segs, reserved)) out.add(p.method);
  if (out.has('GET')) out.add('HEAD');
  return [...out].sort();
}

function splitPath(path: string): string[] {
  const clean = path.split('?')[0] ?? '';
  return clean.split('/').filter((s, i, all) => !(s === '' && (i === 0 || i === all.length - 1)));
}

function matches(pattern: readonly string[], segs: readonly string[], reserved: ReadonlySet<string>): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i] as string;
    if (p === '*') return true;
    const s = segs[i];
    if (s === undefined) return false;
    if (p.startsWith(':')) {
      if (s === '') return false;
      if (p === ':tenant_id' && reserved.has(decoded(s).toLowerCase())) return false;
      continue;
    }
    if (p !== s) return false;
  }
  return pattern.length === segs.length;
}

function decoded(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function methodNotAllowed(reply: FastifyReply, method: string, allow: readonly string[]): void {
  const err = new AppError('METHOD_NOT_ALLOWED', `${method} is not allowed here; this path allows ${allow.join(', ')}.`);
  void reply.status(405).header('allow', allow.join(', ')).send(errorBody(err));
}

/**
 * Registers the route watcher, the alias check (an onRequest hook: register it before authentication)
 * and the not-found handler. `reserved` are the tenant ids that name fixed paths.
 */
export function registerMethodChecks(app: FastifyInstance, reserved: ReadonlySet<string>): void {
  const patterns: Pattern[] = [];
  app.addHook('onRoute', (r) => {
    // A catch-all (the CORS preflight route `*`) says nothing about which paths exist.
    if (r.url === '*' || r.url === '/*') return;
    for (const method of [r.method].flat()) patterns.push({ method, segments: splitPath(r.url) });
  });

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const tenantId = (req.params as { tenant_id?: unknown } | undefined)?.tenant_id;
    if (typeof tenantId !== 'string' || !reserved.has(tenantId.toLowerCase())) return;
    const allow = allowedMethods(patterns, req.url, reserved);
    if (!allow.length || allow.includes(req.method)) return;
    methodNotAllowed(reply, req.method, allow);
    return reply;
  });

  app.setNotFoundHandler((req, reply) => {
    const allow = allowedMethods(patterns, req.url, reserved);
    if (allow.length && !allow.includes(req.method)) return methodNotAllowed(reply, req.method, allow);
    void reply.status(404).send(errorBody(new AppError('NOT_FOUND', `No route ${req.method} ${req.url.split('?')[0]}`)));
  });
}
