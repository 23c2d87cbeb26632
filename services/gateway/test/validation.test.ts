// What is refused when a tenant or destination is saved, rather than stored changed or failing at
// delivery: templates that are not JMESPath expressions (every template field of every type, found in
// the registry), metadata values that are not strings, peer addresses the sender cannot connect to
// (every URL and host:port field, found in the registry: a URL new URL() refuses, a port out of range), webhook
// secret expiries that are not RFC 3339 instants, a rotate_secret that is not a boolean, topics
// and rate limits the schema validator would convert, and (on every route taking one) date-times no
// Date or Postgres holds. Create and update paths; both databases.
import t, { type Test } from 'tap';
import { REGISTRY } from '@switchyard/shared/destinations/registry.ts';
import { buildEmbeddedTestApp, buildTestApp, SERVICE_ACCOUNT_JSON, type TestApp } from './helpers.ts';

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
  sqs: { type: 'sqs', topics: '*', config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' }, credentials: aws },
  rabbitmq: {
    type: 'rabbitmq',
    topics: '*',
    config: { server_url: 'mq.example.com:5672', exchange: 'events' },
    credentials: { username: 'switchyard', password: 'rabbit-secret' },
  },
  pubsub: {
    type: 'pubsub',
    topics: '*',
    config: { project_id: 'my-project', topic: 'events', endpoint: 'localhost:8085' },
    // A real key: the endpoints tried below include https:// ones, which take no placeholder.
    credentials: { service_account_json: SERVICE_ACCOUNT_JSON },
  },
};

/**
 * Addresses each field's pattern takes but the sender could never connect to, with the message
 * expected, by `type.key`: a URL new URL() refuses (an unclosed IPv6 bracket, a port past 65535, a
 * bad escape) or a port 0; a host:port past 65535 or 0.
 */
const BAD_URLS: Array<[string, string]> = [
  ['http://[::1', 'is not a valid URL'],
  ['https://example.com:99999/hook', 'is not a valid URL'],
  ['http://exa%mple.com/', 'is not a valid URL'],
  ['http://example.com:0/', 'must have a port from 1 to 65535'],
];
const BAD_HOST_PORTS: Array<[string, string]> = [
  ['mq.example.com:99999', 'must have a port from 1 to 65535'],
  ['mq.example.com:0', 'must have a port from 1 to 65535'],
];
const BAD_ADDRESSES: Record<string, Array<[string, string]>> = {
  'webhook.url': BAD_URLS,
  'sqs.queue_url': BAD_URLS,
  'sqs.endpoint': BAD_URLS,
  'kinesis.endpoint': BAD_URLS,
  's3.endpoint': BAD_URLS,
  'rabbitmq.server_url': BAD_HOST_PORTS,
  'kafka.brokers': [...BAD_HOST_PORTS, ['b1.example.com:9093, kafka_1:65536', 'must have a port from 1 to 65535']],
  'pubsub.endpoint': [
    ...BAD_HOST_PORTS,
    ['https://localhost:99999', 'is not a valid URL'],
    ['http://localhost:0', 'must have a port from 1 to 65535'],
  ],
};

/** A valid address of each field, to create the destination PATCH then tries to break. */
const GOOD_ADDRESS: Record<string, string> = {
  'webhook.url': 'http://[::1]:8080/hook',
  'sqs.queue_url': 'http://[::1]:9324/000000000000/q',
  'sqs.endpoint': 'http://127.0.0.1:9324',
  'kinesis.endpoint': 'http://localhost:4567',
  's3.endpoint': 'http://localhost:4569',
  'rabbitmq.server_url': 'mq.example.com:65535',
  'kafka.brokers': 'b1.example.com:9093, kafka_1:9092',
  'pubsub.endpoint': 'http://127.0.0.1:8085',
};

const modes: Array<[string, (t: { teardown(fn: () => unknown): void }) => Promise<TestApp>]> = [
  ['stack (Postgres)', (t) => buildTestApp(t)],
  ['embedded (PGlite)', (t) => buildEmbeddedTestApp(t)],
];

/** Every config field that holds a template, by type. */
const TEMPLATE_FIELDS = Object.values(REGISTRY).flatMap((def) =>
  def.config_fields.filter((f) => f.key.endsWith('_template')).map((f) => ({ type: def.type, key: f.key })),
);

/** Every field holding a peer's address, by type. */
const ADDRESS_FIELDS = Object.values(REGISTRY).flatMap((def) =>
  [...def.config_fields, ...def.credential_fields].filter((f) => f.format === 'address').map((f) => `${def.type}.${f.key}`),
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

t.test('the registry has the address fields this test covers', async (t) => {
  t.same(ADDRESS_FIELDS.sort(), Object.keys(BAD_ADDRESSES).sort());
  t.same(Object.keys(GOOD_ADDRESS).sort(), Object.keys(BAD_ADDRESSES).sort());
});

for (const [mode, build] of modes) {
  t.test(mode, async (t) => {
    const { call, db } = await build(t);
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

    t.test('an address the sender cannot connect to: 422 on create and on PATCH, nothing stored', async (t) => {
      const dests = '/api/v1/tenants/acme/destinations';
      for (const [field, bad] of Object.entries(BAD_ADDRESSES)) {
        const [type, key] = field.split('.') as [string, string];
        const base = VALID[type] as { config: Record<string, unknown> };
        const [[firstBad]] = bad as [[string, string]];
        for (const [address, message] of bad) {
          const r = await call('POST', dests, { ...base, id: 'bad-address', config: { ...base.config, [key]: address } });
          refused(t, r, [`body.config.${key}`], `${field} ${address} on create`);
          t.equal(r.body.problems[0].message, message, `${field} ${address}: ${message}`);
        }
        t.equal((await call('GET', `${dests}/bad-address`)).status, 404, `${field}: nothing created`);
        const ok = await call('POST', dests, { ...base, config: { ...base.config, [key]: GOOD_ADDRESS[field] } });
        t.equal(ok.status, 201, `${field}: ${GOOD_ADDRESS[field]} is taken`);
        const url = `${dests}/${ok.body.id}`;
        refused(t, await call('PATCH', url, { config: { [key]: firstBad } }), [`body.config.${key}`], `${field} on PATCH`);
        t.equal((await call('GET', url)).body.config[key], GOOD_ADDRESS[field], `${field}: the stored address is unchanged`);
        t.equal((await call('DELETE', url)).status, 200);
      }
    });

    t.test('an address stored before its rule: named by a PATCH until set right; enable, disable, delete taken', async (t) => {
      const dests = '/api/v1/tenants/acme/destinations';
      const ok = await call('POST', dests, { ...VALID.rabbitmq, id: 'stored-before' });
      t.equal(ok.status, 201);
      // As an older version stored it: the pattern of the time took any port of up to five digits.
      await db('destinations')
        .where({ tenant_id: 'acme', id: 'stored-before' })
        .update({ config: { server_url: 'mq.example.com:99999', exchange: 'events' } });
      const url = `${dests}/stored-before`;
      refused(t, await call('PATCH', url, { topics: ['*'] }), ['body.config.server_url'], 'a PATCH of another member');
      t.equal((await call('PUT', `${url}/disable`)).status, 200, 'disable');
      t.equal((await call('PUT', `${url}/enable`)).status, 200, 'enable');
      const fixed = await call('PATCH', url, { topics: ['*'], config: { server_url: 'mq.example.com:5672' } });
      t.equal(fixed.status, 200, 'a PATCH that sets it right');
      await db('destinations')
        .where({ tenant_id: 'acme', id: 'stored-before' })
        .update({ config: { server_url: 'mq.example.com:0', exchange: 'events' } });
      t.equal((await call('DELETE', url)).status, 200, 'delete');
    });

    t.test('previous_secret_invalid_at must be an RFC 3339 date-time of a real instant: 422, nothing stored', async (t) => {
      const dests = '/api/v1/tenants/acme/destinations';
      const path = 'body.credentials.previous_secret_invalid_at';
      const credentials = { secret: 'whsec_current', previous_secret: 'whsec_old', previous_secret_invalid_at: '2999-01-01T00:00:00Z' };
      const created = await call('POST', dests, { ...VALID.webhook, id: 'ps-test', credentials });
      t.equal(created.status, 201);
      const url = `${dests}/ps-test`;
      const bad = [
        'garbage',
        'yesterday-ish',
        '2030-01-01',
        '2030-01-01T00:00:00',
        '2030-01-01 00:00:00Z',
        'Tue, 01 Jan 2030 00:00:00 GMT',
        '2030-02-30T00:00:00Z',
        '2030-04-31T00:00:00Z',
        '2030-01-01T24:00:00Z',
        '2016-12-31T23:59:60Z',
        '2030-01-01T00:00:00+24:00',
      ];
      for (const at of bad) {
        const r = await call('POST', dests, {
          ...VALID.webhook,
          id: 'ps-bad',
          credentials: { ...credentials, previous_secret_invalid_at: at },
        });
        refused(t, r, [path], `create with ${at}`);
        t.match(r.body.problems[0].message, /must be an RFC 3339 date-time/);
        refused(t, await call('PATCH', url, { credentials: { previous_secret_invalid_at: at } }), [path], `PATCH with ${at}`);
      }
      t.equal((await call('GET', `${dests}/ps-bad`)).status, 404, 'nothing created');
      const kept = (await call('GET', url)).body.credentials;
      t.same(kept, credentials, 'the previous secret and its expiry are unchanged: double signing goes on');
      const next = await call('PATCH', url, { credentials: { previous_secret: 'whsec_QkJC' } });
      t.equal(next.status, 200);
      t.equal(next.body.credentials.previous_secret, 'whsec_QkJC', 'a later previous_secret takes effect');
      for (const at of ['2030-01-01T00:00:00Z', '2030-01-01T00:00:00.123+02:00', '2028-02-29t12:00:00z']) {
        const r = await call('PATCH', url, { credentials: { previous_secret_invalid_at: at } });
        t.equal(r.status, 200, `${at} accepted`);
        t.equal(r.body.credentials.previous_secret_invalid_at, at, 'stored as sent');
      }
    });

    t.test('rotate_secret must be a boolean ("true"/"false" as a checkbox takes them): 422 otherwise, nothing rotated', async (t) => {
      const dests = '/api/v1/tenants/acme/destinations';
      const hook = (await call('POST', dests, VALID.webhook)).body;
      const url = `${dests}/${hook.id}`;
      for (const value of ['yes', 'on', 1, {}]) {
        const r = await call('PATCH', url, { credentials: { rotate_secret: value } });
        refused(t, r, ['body.credentials.rotate_secret'], `PATCH with ${JSON.stringify(value)}`);
        t.equal(r.body.problems[0].message, 'must be a boolean');
        refused(
          t,
          await call('POST', dests, { ...VALID.webhook, credentials: { rotate_secret: value } }),
          ['body.credentials.rotate_secret'],
          `create with ${JSON.stringify(value)}`,
        );
      }
      t.same((await call('GET', url)).body.credentials, hook.credentials, 'not rotated');
      const rotated = await call('PATCH', url, { credentials: { rotate_secret: 'true' } });
      t.equal(rotated.status, 200);
      t.equal(rotated.body.credentials.previous_secret, hook.credentials.secret, '"true" rotates, as true does');
    });

    t.test('topics must be strings as sent: 422, never stored converted', async (t) => {
      const dests = '/api/v1/tenants/acme/destinations';
      const bad = await call('POST', dests, { ...VALID.webhook, id: 'num-topics', topics: [1, 'order.paid', true, null] });
      refused(t, bad, ['body.topics[0]', 'body.topics[2]', 'body.topics[3]'], 'create');
      t.same(
        bad.body.problems.map((p: { message: string }) => p.message),
        ['must be a string, not a number', 'must be a string, not a boolean', 'must be a string, not null'],
      );
      for (const topics of [1, true, null, { a: 'b' }]) {
        const r = await call('POST', dests, { ...VALID.webhook, id: 'num-topics', topics });
        refused(t, r, ['body.topics'], `create with ${JSON.stringify(topics)}`);
        t.match(r.body.problems[0].message, /^must be "\*" or a non-empty array of strings, not /);
      }
      t.equal((await call('GET', `${dests}/num-topics`)).status, 404, 'nothing created');
      const ok = await call('POST', dests, { ...VALID.webhook, topics: ['order.paid'] });
      const url = `${dests}/${ok.body.id}`;
      refused(t, await call('PATCH', url, { topics: [1] }), ['body.topics[0]'], 'PATCH');
      t.same((await call('GET', url)).body.topics, ['order.paid'], 'unchanged');
      const none = await call('PATCH', url, { topics: [] });
      refused(t, none, ['body.topics'], 'no topics: one problem, not one a schema form');
      t.equal(none.body.problems[0].message, 'must be "*" or a non-empty array of strings');
    });

    t.test('a custom_headers that is not an object of strings is named once', async (t) => {
      for (const custom_headers of ['x-a: 1', ['x-a'], { 'x-a': 1 }]) {
        const r = await call('POST', '/api/v1/tenants/acme/destinations', {
          ...VALID.webhook,
          config: { ...(VALID.webhook?.config as object), custom_headers },
        });
        refused(t, r, ['body.config.custom_headers'], `custom_headers ${JSON.stringify(custom_headers)}`);
      }
    });

    t.test('ordered must be a boolean and id a string as sent: 422, never stored converted', async (t) => {
      const dests = '/api/v1/tenants/acme/destinations';
      for (const ordered of [1, 'true', [true]]) {
        const r = await call('POST', dests, { ...VALID.webhook, id: 'ord-bad', ordered });
        refused(t, r, ['body.ordered'], `ordered ${JSON.stringify(ordered)}`);
      }
      t.equal((await call('GET', `${dests}/ord-bad`)).status, 404, 'nothing created');
      refused(t, await call('POST', dests, { ...VALID.webhook, id: 5 }), ['body.id'], 'id 5');
      t.equal((await call('GET', `${dests}/5`)).status, 404, 'not created as "5"');
      const ok = await call('POST', dests, { ...VALID.webhook, ordered: true });
      const url = `${dests}/${ok.body.id}`;
      refused(t, await call('PATCH', url, { ordered: 0 }), ['body.ordered'], 'PATCH');
      t.equal((await call('GET', url)).body.ordered, true, 'unchanged');
      const reset = await call('PATCH', url, { ordered: null });
      t.equal(reset.status, 200, 'null: back to the default');
      t.notOk(reset.body.ordered, 'not ordered');
    });

    t.test('rate_limit as sent: a member must be a number, rate_limit an object or null; 422, nothing stored', async (t) => {
      const dests = '/api/v1/tenants/acme/destinations';
      const nullLimit = await call('POST', dests, { ...VALID.webhook, id: 'rl-null', rate_limit: { per_second: null } });
      refused(t, nullLimit, ['body.rate_limit.per_second'], 'per_second null');
      t.equal(nullLimit.body.problems[0].message, 'must be an integer, not null');
      const cases: Array<[unknown, string[]]> = [
        [{ per_minute: null }, ['body.rate_limit.per_minute']],
        [{ per_second: '5' }, ['body.rate_limit.per_second']],
        [{ per_second: [5], per_minute: true }, ['body.rate_limit.per_second', 'body.rate_limit.per_minute']],
        ['', ['body.rate_limit']],
        [false, ['body.rate_limit']],
        [0, ['body.rate_limit']],
      ];
      for (const [limit, paths] of cases) {
        const r = await call('POST', dests, { ...VALID.webhook, id: 'rl-null', rate_limit: limit });
        refused(t, r, paths, `create with ${JSON.stringify(limit)}`);
        t.match(r.body.problems[0].message, /^must be (an integer|an object or null), not /);
      }
      t.equal((await call('GET', `${dests}/rl-null`)).status, 404, 'nothing created');
      const ok = await call('POST', dests, { ...VALID.webhook, rate_limit: { per_second: 10 } });
      const url = `${dests}/${ok.body.id}`;
      for (const [limit, paths] of cases)
        refused(t, await call('PATCH', url, { rate_limit: limit }), paths, `PATCH with ${JSON.stringify(limit)}`);
      t.same((await call('GET', url)).body.rate_limit, { per_second: 10 }, 'the stored limit is unchanged');
    });

    t.test('a date-time no Date or Postgres holds: 422 on every route taking one, nothing stored or sent', async (t) => {
      const dests = '/api/v1/tenants/acme/destinations';
      const event = { tenant_id: 'acme', topic: 'user.created', data: {} };
      // RFC 3339 allows each (ajv's own date-time format takes them): a leap second, year 0, an
      // offset carrying year 1 back to 0, and an offset carrying year 9999 on to 10000.
      for (const at of ['2016-12-31T23:59:60Z', '0000-01-01T00:00:00Z', '0001-01-01T00:00:00+00:01', '9999-12-31T23:59:59-00:01']) {
        refused(
          t,
          await call('POST', dests, { ...VALID.webhook, id: 'dt-bad', disabled_at: at }),
          ['body.disabled_at'],
          `disabled_at ${at}`,
        );
        refused(t, await call('POST', '/api/v1/publish', { ...event, time: at }), ['body.time'], `publish time ${at}`);
        refused(t, await call('POST', '/api/v1/publish', { ...event, deliver_at: at }), ['body.deliver_at'], `publish deliver_at ${at}`);
        const batch = await call('POST', '/api/v1/publish/batch', { events: [{ ...event, time: at }] });
        t.equal(batch.status, 200);
        t.match(
          batch.body.results,
          [{ status: 422, code: 'VALIDATION_FAILED', problems: [{ path: 'body.events[0].time' }] }],
          `batch ${at}`,
        );
        for (const body of [{ since: at }, { since: '2016-01-01T00:00:00Z', until: at }])
          refused(
            t,
            await call('POST', '/api/v1/tenants/acme/replay', body),
            [`body.${Object.keys(body).at(-1)}`],
            `replay ${JSON.stringify(body)}`,
          );
        const metrics = await call('GET', `/api/v1/tenants/acme/metrics/attempts?start=${encodeURIComponent(at)}`);
        t.equal(metrics.status, 422, `metrics start ${at}`);
      }
      t.equal((await call('GET', `${dests}/dt-bad`)).status, 404, 'nothing created');
      // Offsets Postgres refuses (past ±15:59) or a Date cannot read (hours only) are taken, in UTC.
      const far = await call('POST', dests, { ...VALID.webhook, id: 'dt-far', disabled_at: '2030-01-01T00:00:00+20:00' });
      t.equal(far.status, 201, 'an offset of 20 hours');
      t.equal(far.body.disabled_at, '2029-12-31T04:00:00.000Z');
      const hours = await call('POST', dests, { ...VALID.webhook, id: 'dt-hours', disabled_at: '2030-01-01T00:00:00+05' });
      t.equal(hours.status, 201, 'an offset of hours only');
      t.equal(hours.body.disabled_at, '2029-12-31T19:00:00.000Z');
      const since = await call('POST', '/api/v1/tenants/acme/replay', { since: '2020-01-01T00:00:00+05' });
      t.equal(since.status, 202, 'replay since an offset of hours only');
    });
  });
}
