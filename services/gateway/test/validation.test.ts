// What is refused when a tenant or destination is saved, rather than stored changed or failing at
// delivery: templates that are not JMESPath expressions (every template field of every type, found in
// the registry) and metadata values that are not strings. Create and update paths; both databases.
import t, { type Test } from 'tap';
import { REGISTRY } from '@switchyard/shared/destinations/registry.ts';
import { buildEmbeddedTestApp, buildTestApp, type TestApp } from './helpers.ts';

/** Valid create bodies of the types used here (required fields only). */
const aws = { key: 'AKIAEXAMPLE', secret: 'aws-secret-value-123' };
const VALID: Record<string, Record<string, unknown>> = {
  webhook: { type: 'webhook', topics: '*', config: { url: 'https://example.com/hook' } },
  kinesis: { type: 'kinesis', topics: '*', config: { stream_name: 'events', region: 'us-east-1' }, credentials: aws },
  s3: { type: 's3', topics: '*', config: { bucket: 'my-bucket', region: 'us-east-1' }, credentials: aws },
  kafka: {
    type: 'kafka',
    topics: '*',
    config: { brokers: 'b1.example.com:9093', topic: 'events', sasl_mechanism: 'scram-sha-512' },
    credentials: { username: 'switchyard', password: 'kafka-secret-123' },
  },
};

const modes: Array<[string, (t: { teardown(fn: () => unknown): void }) => Promise<TestApp>]> = [
  ['stack (Postgres)', (t) => buildTestApp(t)],
  ['embedded (PGlite)', (t) => buildEmbeddedTestApp(t)],
];

/** Every config field that holds a template, by type. */
const TEMPLATE_FIELDS = Object.values(REGISTRY).flatMap((def) =>
  def.config_fields.filter((f) => f.key.endsWith('_template')).map((f) => ({ type: def.type, key: f.key })),
);

/** The 422 answer names exactly `paths`, in the documented shape. */
function refused(t: Test, r: { status: number; body: any }, paths: string[], why: string) {
  t.equal(r.status, 422, `${why}: 422`);
  t.equal(r.body?.code, 'VALIDATION_FAILED', `${why}: VALIDATION_FAILED`);
  t.same((r.body?.problems ?? []).map((p: { path: string }) => p.path).sort(), [...paths].sort(), `${why}: names ${paths.join(', ')}`);
  t.equal(r.body?.data?.length, paths.length, `${why}: data lists every problem`);
}

t.test('the registry has the template fields this test covers', async (t) => {
  t.same(TEMPLATE_FIELDS.map((f) => `${f.type}.${f.key}`).sort(), [
    'kafka.partition_key_template',
    'kinesis.partition_key_template',
    's3.key_template',
  ]);
});

for (const [mode, build] of modes) {
  t.test(mode, async (t) => {
    const { call } = await build(t);
    t.equal((await call('PUT', '/api/v1/tenants/acme')).status, 201);

    t.test('a template that is not a JMESPath expression: 422 on create and on PATCH, nothing stored', async (t) => {
      for (const { type, key } of TEMPLATE_FIELDS) {
        const base = VALID[type] as { config: Record<string, unknown> };
        const bad = await call('POST', '/api/v1/tenants/acme/destinations', {
          ...base,
          config: { ...base.config, [key]: "join('/', [data.a" },
        });
        refused(t, bad, [`body.config.${key}`], `${type} ${key} on create`);
        t.match(bad.body.problems[0].message, /is not a JMESPath expression/);

        const ok = await call('POST', '/api/v1/tenants/acme/destinations', {
          ...base,
          config: { ...base.config, [key]: 'join(\'/\', [metadata.topic, metadata."event-id"])' },
        });
        t.equal(ok.status, 201, `${type}: a valid ${key} is accepted`);
        const blank = await call('POST', '/api/v1/tenants/acme/destinations', { ...base, config: { ...base.config, [key]: '  ' } });
        t.equal(blank.status, 201, `${type}: a blank ${key} means the default`);

        const url = `/api/v1/tenants/acme/destinations/${ok.body.id}`;
        refused(t, await call('PATCH', url, { config: { [key]: 'data.[' } }), [`body.config.${key}`], `${type} ${key} on PATCH`);
        t.equal(
          (await call('GET', url)).body.config[key],
          'join(\'/\', [metadata.topic, metadata."event-id"])',
          'the stored template is unchanged',
        );
        for (const id of [ok.body.id, blank.body.id])
          t.equal((await call('DELETE', `/api/v1/tenants/acme/destinations/${id}`)).status, 200);
      }
    });

    t.test('tenant metadata values must be strings: 422, never stored as text', async (t) => {
      refused(t, await call('PUT', '/api/v1/tenants/meta-co', { metadata: { k: null } }), ['body.metadata.k'], 'null on create');
      refused(
        t,
        await call('PUT', '/api/v1/tenants/meta-co', { metadata: { k: 5, b: true, o: {}, a: [] } }),
        ['body.metadata.k', 'body.metadata.b', 'body.metadata.o', 'body.metadata.a'],
        'other types on create',
      );
      t.equal((await call('GET', '/api/v1/tenants/meta-co')).status, 404, 'no tenant was created');
      const created = await call('PUT', '/api/v1/tenants/meta-co', { metadata: { plan: 'gold', empty: '' } });
      t.equal(created.status, 201);
      t.same(created.body.metadata, { plan: 'gold', empty: '' });
      refused(t, await call('PUT', '/api/v1/meta-co', { metadata: { plan: 5 } }), ['body.metadata.plan'], 'a number on update');
      t.same((await call('GET', '/api/v1/tenants/meta-co')).body.metadata, { plan: 'gold', empty: '' }, 'unchanged');
    });

    t.test('destination metadata and delivery_metadata values must be strings (null removes, on PATCH only)', async (t) => {
      const body = VALID.webhook as Record<string, unknown>;
      const dests = '/api/v1/tenants/acme/destinations';
      refused(
        t,
        await call('POST', dests, { ...body, metadata: { n: 5 }, delivery_metadata: { x: null } }),
        ['body.metadata.n', 'body.delivery_metadata.x'],
        'create',
      );
      const ok = await call('POST', dests, { ...body, metadata: { a: '1', b: '2' }, delivery_metadata: { 'x-team': 'core' } });
      t.equal(ok.status, 201);
      const url = `${dests}/${ok.body.id}`;
      refused(
        t,
        await call('PATCH', url, { metadata: { a: 1 }, delivery_metadata: { 'x-team': false } }),
        ['body.metadata.a', 'body.delivery_metadata.x-team'],
        'PATCH',
      );
      const patched = await call('PATCH', url, { metadata: { a: null, c: '3' } });
      t.equal(patched.status, 200, 'null removes a name in a merge patch');
      t.same(patched.body.metadata, { b: '2', c: '3' });
    });
  });
}
