// The OpenAPI document is exact (issue 43): strict validators accept it, every operation documents
// what it can answer with named models, path parameters are those of the path, and /healthz needs
// no credential. The e2e suites check every answer they see against it (shared/src/testing/openapi.ts).
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import { DESTINATION_TYPES } from '@switchyard/shared/model/index.ts';
import { ERRORS } from '@switchyard/shared/errors.ts';
import { type Doc as CheckedDoc, openApiChecker } from '@switchyard/shared/testing/openapi.ts';
import { openapiDocument } from '../src/openapi-document.ts';

type Op = {
  parameters?: Array<{ in: string; name: string; required?: boolean; schema?: Record<string, unknown> }>;
  responses: Record<string, { $ref?: string; content?: Record<string, { schema: { $ref?: string } }> }>;
  security?: unknown[];
  requestBody?: { required?: boolean; content: Record<string, { schema: { $ref?: string } }> };
};
type Doc = {
  paths: Record<string, Record<string, Op>>;
  components: { schemas: Record<string, Record<string, unknown>>; responses: Record<string, Op['responses'][string]> };
  security: unknown[];
};

t.test('the document passes strict OpenAPI 3.1 validators', async (t) => {
  const doc = await openapiDocument();
  const structural = await new Validator().validate(doc);
  t.ok(structural.valid, `@seriousme/openapi-schema-validator: ${JSON.stringify(structural.errors ?? []).slice(0, 500)}`);
  // Redocly's strictest rule set (what openapi-typescript and most generators parse with), without
  // the rules the contract itself breaks: both path forms make /api/v1/{tenant_id}/x and
  // /api/v1/tenants/{tenant_id} ambiguous by design, /healthz has no 4xx answer, and the server's
  // address is the deployment's (no `servers`); and without license and operationId.
  const config = await createConfig({
    extends: ['recommended-strict'],
    rules: {
      'no-ambiguous-paths': 'off',
      'operation-4xx-response': 'off',
      'no-empty-servers': 'off',
      'info-license': 'off',
      'operation-operationId': 'off',
    },
  });
  const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: '/openapi.json', config });
  t.same(
    problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`),
    [],
    'redocly lint (recommended-strict) finds nothing',
  );
});

t.test('every operation is exact', async (t) => {
  const doc = (await openapiDocument()) as unknown as Doc;
  const names = Object.keys(doc.components.schemas);
  for (const model of ['Tenant', 'Destination', 'Event', 'Attempt', 'TenantPage', 'EventPage', 'AttemptPage', 'Error', 'PublishResult'])
    t.ok(names.includes(model), `component ${model}`);
  t.notOk(
    names.some((n) => n.startsWith('def-')),
    'every component is named',
  );
  const enumOf = (model: string, field: string) =>
    (doc.components.schemas[model]?.properties as Record<string, { enum?: string[] }> | undefined)?.[field]?.enum;
  t.same(enumOf('Error', 'code'), Object.keys(ERRORS), 'error codes enumerated');
  t.same(enumOf('Destination', 'type'), [...DESTINATION_TYPES], 'destination types enumerated');

  let ops = 0;
  for (const [path, methods] of Object.entries(doc.paths)) {
    const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    for (const [method, op] of Object.entries(methods)) {
      ops++;
      const where = `${method.toUpperCase()} ${path}`;
      const declared = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      t.same(declared.sort(), [...inPath].sort(), `${where}: path parameters are exactly those of the path`);
      const isHealth = path.endsWith('/healthz');
      if (isHealth) t.same(op.security, [], `${where} needs no credential`);
      else t.notOk('security' in op, `${where} has the document's bearer requirement`);
      const statuses = Object.keys(op.responses);
      t.ok(
        statuses.some((s) => /^2\d\d$/.test(s)),
        `${where} documents its success`,
      );
      // A named response (#/components/responses/X) stands for its definition.
      const resolve = (r: Op['responses'][string] | undefined) =>
        r?.$ref ? doc.components.responses[r.$ref.replace('#/components/responses/', '')] : r;
      for (const s of isHealth ? ['500'] : ['401', '403', '404', '422', '500', '503'])
        t.equal(
          resolve(op.responses[s])?.content?.['application/json']?.schema.$ref,
          '#/components/schemas/Error',
          `${where} documents ${s} as Error`,
        );
      for (const [s, r] of Object.entries(op.responses))
        t.match(
          resolve(r)?.content?.['application/json']?.schema,
          { $ref: /^#\/components\/schemas\/\w+$/ },
          `${where} ${s}: a named model`,
        );
      if (op.requestBody)
        t.match(op.requestBody.content['application/json']?.schema ?? {}, { $ref: /^#\/components\/schemas\// }, `${where}: named body`);
    }
  }
  t.ok(ops > 70, `${ops} operations`);
  t.equal(doc.paths['/api/v1/tenants/{tenant_id}']?.put?.requestBody?.required, false, 'PUT tenant: the body is optional');
  t.equal(doc.paths['/api/v1/publish']?.post?.requestBody?.required, true, 'publish: the body is required');
  const attemptParams = doc.paths['/api/v1/attempts']?.get?.parameters ?? [];
  t.match(attemptParams.find((p) => p.name === 'include')?.schema, {
    anyOf: [{ enum: ['event', 'event.data', 'response_data', 'destination'] }],
  });
  t.match(attemptParams.find((p) => p.name === 'status')?.schema, { anyOf: [{ enum: ['success', 'failed', 'canceled'] }] });
  t.match(attemptParams.find((p) => p.name === 'dir')?.schema, { enum: ['asc', 'desc'] });
});

t.test('the answer checker the e2e suites use catches what the document does not allow', async (t) => {
  const c = openApiChecker((await openapiDocument()) as unknown as CheckedDoc);
  const tenant = { id: 'acme', destinations_count: 0, topics: [], created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z' };
  t.same(c.check('GET', '/api/v1/tenants/acme', 200, tenant), []);
  t.same(
    c.check('GET', '/api/v1/acme', 404, { status: 404, code: 'TENANT_NOT_FOUND', message: 'Tenant not found.' }),
    [],
    'named error response',
  );
  t.equal(c.check('GET', '/api/v1/tenants/acme', 200, { ...tenant, topics: null }).length, 1, 'null where a list is due');
  t.equal(c.check('GET', '/api/v1/acme', 404, { status: 404, code: 'NOPE', message: 'x' }).length, 1, 'an unknown error code');
  t.equal(c.check('GET', '/api/v1/tenants/acme', 418, {}).length, 1, 'an undocumented status');
  t.equal(c.check('GET', '/api/v1/nowhere/at/all/really', 200, {}).length, 1, 'an undocumented operation');
  t.same(c.check('GET', '/api/v1/nowhere/at/all/really', 404, { status: 404, code: 'NOT_FOUND', message: 'No route' }), []);
  t.equal(c.problems.length, 4);
});
