/**
 * The error answers of every operation in the OpenAPI document (docs/errors.md), so that a client
 * or a fuzzer reading the document finds every status the gateway may answer. Document-only (a
 * @fastify/swagger transform): the routes' own schemas keep validating and serialising as written.
 * Issue 43 makes each operation's list exact; this is the catch-all the fuzz run needs meanwhile.
 */
import type { FastifySchema } from 'fastify';
import { ERRORS } from '@switchyard/shared/errors.ts';

const errorShape = {
  type: 'object',
  required: ['status', 'code', 'message'],
  properties: {
    status: { type: 'integer' },
    code: { type: 'string', enum: Object.keys(ERRORS) },
    message: { type: 'string' },
    data: {},
  },
} as const;

/** Statuses any authenticated route may answer: credentials, input, limits, overload. */
const STATUSES = [...new Set(Object.values(ERRORS).map((e) => e.status))].sort();

export function withErrorResponses({ schema, url, route }: { schema: FastifySchema; url: string; route: { config?: unknown } }) {
  const s = { ...(schema ?? {}) } as Record<string, unknown>;
  const isPublic = (route.config as { public?: boolean } | undefined)?.public === true;
  const responses = { ...((s.response as Record<string, object> | undefined) ?? {}) };
  for (const status of isPublic ? [500, 503] : STATUSES) {
    if (!(String(status) in responses))
      responses[String(status)] = { description: `An error (docs/errors.md).`, content: { 'application/json': { schema: errorShape } } };
  }
  // A route that declares no success answer still has one: say so, without a shape.
  if (!Object.keys(responses).some((k) => k.startsWith('2'))) responses['2xx'] = { description: 'Success.' };
  s.response = responses;
  return { schema: s, url };
}
