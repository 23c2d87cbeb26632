/**
 * The type names answers carry (API_TYPE_NAMES). switchyard: interface.md's, as stored; outpost:
 * the other service's (aws_sqs, gcp_pubsub, hookdeck, ...), so that its clients, whose SDK checks
 * every answer against its own enumeration, read ours unchanged; auto (the default): the other
 * service's names for requests from its SDKs, known by their User-Agent, interface.md's for every
 * other client. Input takes both names either way (shared/src/destinations/registry.ts), so a
 * client may send back what it was given.
 *
 * Renamed on the way out, in one place: destination views and type schemas are marked where they
 * are made (TYPE_NAMED), and this hook rewrites `type` in exactly those, wherever an answer holds
 * them (the object itself, a list, a page's `models`, an attempt's `destination`). A `type` key
 * anywhere else (event data, an operator event) is never touched.
 */
import type { FastifyInstance } from 'fastify';
import { canonicalType, OUTPOST_TYPE_NAMES, TYPE_NAMED } from '@switchyard/shared/destinations/registry.ts';
import { DESTINATION_TYPES } from '@switchyard/shared/model/index.ts';

export type TypeNames = 'switchyard' | 'outpost' | 'auto';

/**
 * The other service's generated SDKs name themselves in their User-Agent: `speakeasy-sdk/<language>
 * <versions> <package>`, the package being @hookdeck/outpost-sdk, outpost_sdk or .../sdks/outpost-go.
 * Their answer models are closed enumerations of its names, so they fail on any other; a browser
 * sends no such header (API_TYPE_NAMES=outpost serves those).
 */
const PEER_SDK = /^speakeasy-sdk\/\S+ .*\boutpost/i;

/** The names one request's answers carry. */
export function namesFor(names: TypeNames, userAgent: string | undefined): 'switchyard' | 'outpost' {
  if (names !== 'auto') return names;
  return userAgent !== undefined && PEER_SDK.test(userAgent) ? 'outpost' : 'switchyard';
}

/** The names answers carry, in the registry's order; the document describes what clients without a peer SDK read. */
export function answeredTypeNames(names: TypeNames): string[] {
  return DESTINATION_TYPES.map((t) => (names === 'outpost' ? OUTPOST_TYPE_NAMES[t] : t));
}

/** Where marked objects sit in an answer: a page's items, an attempt's destination. */
const CONTAINERS = ['models', 'destination'] as const;

/** The answer with every marked object's type renamed; untouched parts are the same objects. */
export function withOutpostNames(payload: unknown, depth = 0): unknown {
  if (payload === null || typeof payload !== 'object' || depth > 3) return payload;
  if (Array.isArray(payload)) {
    let changed = false;
    const out = payload.map((x) => {
      const r = withOutpostNames(x, depth + 1);
      if (r !== x) changed = true;
      return r;
    });
    return changed ? out : payload;
  }
  const obj = payload as Record<string, unknown>;
  if (TYPE_NAMED.has(obj)) {
    const t = canonicalType(obj.type);
    return t ? { ...obj, type: OUTPOST_TYPE_NAMES[t] } : obj;
  }
  let out = obj;
  for (const k of CONTAINERS) {
    if (!(k in obj)) continue;
    const r = withOutpostNames(obj[k], depth + 1);
    if (r !== obj[k]) out = { ...out, [k]: r };
  }
  return out;
}

export function registerTypeNames(app: FastifyInstance, names: TypeNames): void {
  if (names === 'outpost') app.addHook('preSerialization', async (_req, _reply, payload) => withOutpostNames(payload));
  if (names === 'auto')
    app.addHook('preSerialization', (req, reply, payload, done) => {
      // The same URL answers differently by User-Agent: a shared cache must key on it.
      const vary = reply.getHeader('vary');
      reply.header('vary', vary ? `${vary}, User-Agent` : 'User-Agent');
      done(null, namesFor(names, req.headers['user-agent']) === 'outpost' ? withOutpostNames(payload) : payload);
    });
}
