// The OpenAPI document is exact: strict validators and linters accept it (redocly, openapi-spec-
// validator), every operation is listed once with a stable operationId (its other path forms as
// aliases), documents what it can answer with named models, path parameters are those of the path,
// and /healthz needs no credential. The e2e suites check every answer they see against it (shared/src/testing/openapi.ts).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import { DESTINATION_TYPES } from '@switchyard/shared/model/index.ts';
import { ERRORS } from '@switchyard/shared/errors.ts';
import { type Doc as CheckedDoc, openApiChecker } from '@switchyard/shared/testing/openapi.ts';
import { ID_PATTERN } from '@switchyard/shared/events/storable.ts';
import { ROOT } from '@switchyard/shared/testing/index.ts';
import { OPERATION_IDS } from '../src/openapi.ts';
import { openapiDocument } from '../src/openapi-document.ts';

type Op = {
  operationId?: string;
  description?: string;
  'x-aliases'?: string[];
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

t.test('the document passes strict OpenAPI 3.1 validators and linters', async (t) => {
  const doc = await openapiDocument();
  const structural = await new Validator().validate(doc);
  t.ok(structural.valid, `@seriousme/openapi-schema-validator: ${JSON.stringify(structural.errors ?? []).slice(0, 500)}`);
  // Redocly's rule sets, as they come: recommended, and recommended-strict (what openapi-typescript
  // and most generators parse with; its warnings are errors).
  for (const ruleset of ['recommended', 'recommended-strict']) {
    const config = await createConfig({ extends: [ruleset] });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: '/openapi.json', config });
    t.same(
      problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`),
      [],
      `redocly lint (${ruleset}) finds nothing`,
    );
  }
  // openapi-spec-validator (Python; infra/openapi-spec-validator.sh installs it from PyPI): an
  // independent implementation of the specification's own schema and rules.
  const install = spawnSync('bash', [join(ROOT, 'infra/openapi-spec-validator.sh')], { encoding: 'utf8', timeout: 600_000 });
  t.equal(install.status, 0, `openapi-spec-validator installed (${install.stderr.slice(-500)})`);
  const dir = mkdtempSync(join(tmpdir(), 'openapi-doc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc));
  const validated = spawnSync(install.stdout.trim(), [join(dir, 'openapi.json')], { encoding: 'utf8', timeout: 300_000 });
  t.equal(validated.status, 0, `openapi-spec-validator: ${validated.stdout.slice(-800)}${validated.stderr.slice(-800)}`);
  t.match(validated.stdout, /OK/, 'openapi-spec-validator says OK');
});

t.test('one operation per path form, named, each parameter once', async (t) => {
  const doc = (await openapiDocument()) as unknown as Doc;
  const ids = new Map<string, string>();
  const known = new Set(Object.values(OPERATION_IDS));
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const where = `${method.toUpperCase()} ${path}`;
      t.ok(op.operationId && known.has(op.operationId), `${where}: operationId ${op.operationId} from OPERATION_IDS`);
      t.notOk(ids.has(op.operationId as string), `${where}: ${op.operationId} is unique (also ${ids.get(op.operationId as string)})`);
      ids.set(op.operationId as string, where);
      const params = (op.parameters ?? []).map((p) => `${p.in} ${p.name}`);
      t.same([...new Set(params)], params, `${where}: no parameter declared twice`);
      const names = (op.parameters ?? []).map((p) => p.name);
      t.same([...new Set(names)], names, `${where}: no name both in the path and the query`);
      for (const p of op.parameters ?? [])
        if (p.in === 'path' && ['tenant_id', 'destination_id', 'event_id'].includes(p.name))
          t.equal(p.schema?.pattern, ID_PATTERN, `${where}: {${p.name}} has the pattern the server enforces`);
      for (const alias of op['x-aliases'] ?? []) {
        t.notOk(doc.paths[alias]?.[method], `${where}: its alias ${alias} is no operation of its own`);
        t.match(op.description, alias, `${where}: the description names ${alias}`);
      }
    }
  }
  t.same(new Set(ids.keys()), known, 'every name in OPERATION_IDS is used');
  const op = (path: string, method = 'get') => doc.paths[path]?.[method];
  t.equal(op('/api/v1/tenants/{tenant_id}/attempts')?.operationId, 'listTenantAttempts');
  t.equal(op('/api/v1/publish', 'post')?.operationId, 'publishEvent');
  t.same(op('/api/v1/tenants/{tenant_id}/destinations')?.['x-aliases'], ['/api/v1/{tenant_id}/destinations', '/api/v1/destinations']);
  t.notOk(doc.paths['/api/v1/{tenant_id}/destinations'], 'the first path form is an alias');
  // tenant_id where the admin key may name tenants without a path: in the query, declared.
  for (const path of [
    '/api/v1/attempts',
    '/api/v1/attempts/{attempt_id}',
    '/api/v1/events',
    '/api/v1/events/{event_id}',
    '/api/v1/events/{event_id}/deliveries',
    '/api/v1/metrics/attempts',
    '/api/v1/metrics/events',
  ])
    t.ok(
      op(path)?.parameters?.some((p) => p.in === 'query' && p.name === 'tenant_id'),
      `GET ${path} declares tenant_id in the query`,
    );
  // The filters of the other service's SDK, where its requests have them (and nowhere else).
  const query = (path: string, name: string) => op(path)?.parameters?.find((p) => p.in === 'query' && p.name === name);
  for (const [path, name, has] of [
    ['/api/v1/events', 'id', true],
    ['/api/v1/tenants/{tenant_id}/events', 'id', true],
    ['/api/v1/tenants/{tenant_id}/destination/{destination_id}/events', 'id', false],
    ['/api/v1/tenants', 'id', true],
    ['/api/v1/attempts', 'destination_type', true],
    ['/api/v1/tenants/{tenant_id}/attempts', 'destination_type', true],
    ['/api/v1/tenants/{tenant_id}/destinations/{destination_id}/attempts', 'destination_type', false],
    ['/api/v1/tenants/{tenant_id}/destinations/{destination_id}/attempts/{attempt_id}', 'tenant_id', false],
  ] as const)
    t.equal(Boolean(query(path, name)), has, `GET ${path} ${has ? 'declares' : 'has no'} ${name} in the query`);
  const typeNames = JSON.stringify(query('/api/v1/attempts', 'destination_type')?.schema);
  for (const name of ['sqs', 'aws_sqs', 'hookdeck', 'gateway']) t.match(typeNames, `"${name}"`, `destination_type enumerates ${name}`);
  t.ok(ids.size >= 40 && ids.size <= 60, `${ids.size} operations`);
});

t.test('servers: the deployment’s API_BASE_URL', async (t) => {
  t.same((await openapiDocument({ API_BASE_URL: 'https://events.example.com/' })).servers, [
    { url: 'https://events.example.com', description: 'This deployment (API_BASE_URL).' },
  ]);
  t.match(
    (await openapiDocument({ API_HOST: '127.0.0.1', API_PORT: '4444' })).servers,
    [{ url: 'http://127.0.0.1:4444' }],
    'else API_HOST:API_PORT',
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
  t.ok(ops > 40, `${ops} operations`);
  t.equal(doc.paths['/api/v1/tenants/{tenant_id}']?.put?.requestBody?.required, false, 'PUT tenant: the body is optional');
  t.equal(doc.paths['/api/v1/publish']?.post?.requestBody?.required, true, 'publish: the body is required');
  const batchEvents = (doc.components.schemas.PublishBatchRequest?.properties as Record<string, { items?: unknown }> | undefined)?.events;
  t.same(batchEvents?.items, { $ref: '#/components/schemas/PublishRequest' }, 'a batch’s events: each a PublishRequest');
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
  t.same(c.check('GET', '/api/v1/acme/destinations', 200, []), [], 'an alias path: checked as its operation');
  t.same(c.check('GET', '/api/v1/destinations', 200, []), [], 'the form without a tenant too');
  t.equal(c.check('GET', '/api/v1/destinations', 200, {}).length, 1, 'and held to it');
  t.equal(c.problems.length, 5);
});
