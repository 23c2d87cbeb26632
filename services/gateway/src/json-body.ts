import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * JSON request bodies. An empty body sent with `Content-Type: application/json` is no body on a
 * route whose body is optional (no body schema, or one that admits null): SDKs send exactly that
 * for `PUT /tenants/{id}` or `DELETE` without fields. Where a body is required it stays a 400
 * INVALID_JSON ("The request body is empty."). Non-empty bodies go to fastify's own parser, which
 * keeps `__proto__` and `constructor` keys as data (JSON.parse makes them own properties; nothing
 * assigns input keys onto a plain object).
 */
export function registerJsonBody(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('ignore', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body.length === 0 && bodyIsOptional(req)) {
      done(null, undefined);
      return;
    }
    parse(req, body as string, done);
  });
}

type BodySchema = { type?: string | string[]; $ref?: string };

function bodyIsOptional(req: FastifyRequest): boolean {
  let schema = (req.routeOptions.schema as { body?: BodySchema } | undefined)?.body;
  // A named model (openapi.ts) is looked up by its $id.
  if (schema?.$ref) schema = req.server.getSchema(schema.$ref.replace(/#$/, '')) as BodySchema | undefined;
  return schema === undefined || [schema.type].flat().includes('null');
}
