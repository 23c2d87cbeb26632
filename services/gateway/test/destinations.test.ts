import t from 'tap';
import { REGISTRY } from '@switchyard/shared/destinations/registry.ts';
import { DESTINATION_TYPES } from '@switchyard/shared/model/index.ts';
import { buildTestApp, SERVICE_ACCOUNT_JSON } from './helpers.ts';

/** A valid create body for each type: required fields only. */
export const VALID: Record<string, Record<string, unknown>> = {
  webhook: { type: 'webhook', topics: '*', config: { url: 'https://example.com/hook' } },
  sqs: {
    type: 'sqs',
    topics: '*',
    config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' },
    credentials: { key: 'AKIAEXAMPLE', secret: 'sqs-secret-value-123' },
  },
  rabbitmq: {
    type: 'rabbitmq',
    topics: '*',
    config: { server_url: 'mq.example.com:5672', exchange: 'events' },
    credentials: { username: 'u', password: 'rabbit-password-1' },
  },
  gateway: { type: 'gateway', topics: '*', credentials: { token: Buffer.from('src_test123:test_signing_key').toString('base64') } },
  kinesis: {
    type: 'kinesis',
    topics: '*',
    config: { stream_name: 'events', region: 'us-east-1' },
    credentials: { key: 'AKIAEXAMPLE', secret: 'kinesis-secret-123' },
  },
  servicebus: {
    type: 'servicebus',
    topics: '*',
    config: { name: 'events' },
    credentials: { connection_string: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=abc' },
  },
  s3: {
    type: 's3',
    topics: '*',
    config: { bucket: 'my-bucket', region: 'us-east-1' },
    credentials: { key: 'AKIAEXAMPLE', secret: 's3-secret-value-123' },
  },
  pubsub: {
    type: 'pubsub',
    topics: '*',
    config: { project_id: 'my-project', topic: 'events' },
    credentials: { service_account_json: SERVICE_ACCOUNT_JSON },
  },
  kafka: {
    type: 'kafka',
    topics: '*',
    config: { brokers: 'b1.example.com:9093,b2.example.com:9093', topic: 'events', sasl_mechanism: 'scram-sha-512' },
    credentials: { username: 'switchyard', password: 'kafka-secret-123' },
  },
};

t.test('destinations', async (t) => {
  const { call, db } = await buildTestApp(t, { TOPICS: 'user.created,user.deleted,order.paid', MAX_DESTINATIONS_PER_TENANT: '12' });
  t.equal((await call('PUT', '/api/v1/tenants/acme')).status, 201);

  t.test('every type: created with its required fields, each missing required field named', async (t) => {
    for (const type of DESTINATION_TYPES) {
      const created = await call('POST', '/api/v1/tenants/acme/destinations', VALID[type]);
      t.equal(created.status, 201, `${type} created`);
      t.equal(created.body.type, type);
      t.equal(created.body.disabled_at, null);
      const def = REGISTRY[type];
      for (const f of def.config_fields.filter((f) => f.required)) {
        const body = structuredClone(VALID[type]) as { config: Record<string, unknown> };
        delete body.config[f.key];
        const r = await call('POST', '/api/v1/tenants/acme/destinations', body);
        t.equal(r.status, 422, `${type} without config.${f.key} is refused`);
        t.match(r.body.problems, [{ path: `body.config.${f.key}`, message: 'is required' }]);
      }
      for (const f of def.credential_fields.filter((f) => f.required)) {
        const body = structuredClone(VALID[type]) as { credentials: Record<string, unknown> };
        delete body.credentials[f.key];
        const r = await call('POST', '/api/v1/tenants/acme/destinations', body);
        t.equal(r.status, 422, `${type} without credentials.${f.key} is refused`);
        t.match(r.body.problems, [{ path: `body.credentials.${f.key}`, message: 'is required' }]);
      }
    }
    // Clean up so later subtests have room under the limit.
    for (const d of (await call('GET', '/api/v1/tenants/acme/destinations')).body)
      await call('DELETE', `/api/v1/tenants/acme/destinations/${d.id}`);
  });

  t.test('sensitive credentials are masked; the webhook secret is readable; no plaintext in the row', async (t) => {
    const s3 = await call('POST', '/api/v1/tenants/acme/destinations', VALID.s3);
    t.match(s3.body.credentials.secret, /^s3-s\*+$/, 'masked with a short prefix');
    t.equal(s3.body.credentials.key, 'AKIAEXAMPLE', 'non-sensitive field readable');
    const hook = await call('POST', '/api/v1/tenants/acme/destinations', {
      ...VALID.webhook,
      delivery_metadata: { team: 'core-secret-team' },
    });
    t.match(hook.body.credentials.secret, /^whsec_[A-Za-z0-9+/=]{40,}$/, 'webhook secret generated and readable');
    const rows = await db('destinations').where({ tenant_id: 'acme' });
    const raw = JSON.stringify(rows);
    t.notMatch(raw, 's3-secret-value-123', 'S3 secret not stored in plaintext');
    t.notMatch(raw, hook.body.credentials.secret, 'webhook secret not stored in plaintext');
    t.notMatch(raw, 'core-secret-team', 'delivery_metadata not stored in plaintext');
  });

  t.test('caller-supplied ids, duplicates, and the per-tenant limit', async (t) => {
    const mine = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, id: 'my-hook' });
    t.equal(mine.status, 201);
    t.equal(mine.body.id, 'my-hook');
    t.equal((await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, id: 'my-hook' })).status, 409);
    const count = (await call('GET', '/api/v1/tenants/acme/destinations')).body.length;
    for (let i = count; i < 12; i++) t.equal((await call('POST', '/api/v1/acme/destinations', VALID.webhook)).status, 201);
    const over = await call('POST', '/api/v1/acme/destinations', VALID.webhook);
    t.equal(over.status, 400);
    t.equal(over.body.code, 'DESTINATION_LIMIT_REACHED');
  });
});

t.test('concurrent creates: one id is created once, and the limit holds', async (t) => {
  const { call } = await buildTestApp(t, { TOPICS: 'user.created', MAX_DESTINATIONS_PER_TENANT: '3' });
  await call('PUT', '/api/v1/tenants/acme');
  const same = await Promise.all(
    Array.from({ length: 6 }, () => call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, id: 'twice' })),
  );
  t.same(same.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409], 'one 201, the rest 409 DESTINATION_EXISTS: none a 500');
  const many = await Promise.all(Array.from({ length: 8 }, () => call('POST', '/api/v1/tenants/acme/destinations', VALID.webhook)));
  t.equal(many.filter((r) => r.status === 201).length, 2, 'two more fit under the limit of 3');
  t.ok(
    many.every((r) => r.status === 201 || r.body.code === 'DESTINATION_LIMIT_REACHED'),
    'the rest: 400 DESTINATION_LIMIT_REACHED',
  );
  t.equal((await call('GET', '/api/v1/tenants/acme/destinations')).body.length, 3, 'never past the limit');
});

t.test('topics, filters, list filters, patch, enable/disable, delete', async (t) => {
  const { call, db } = await buildTestApp(t, { TOPICS: 'user.created,user.deleted,order.paid' });
  await call('PUT', '/api/v1/tenants/acme');

  t.test('topics must be configured; * is kept as all', async (t) => {
    const bad = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, topics: ['user.created', 'nope'] });
    t.equal(bad.status, 422);
    t.match(bad.body.problems, [{ path: 'body.topics', message: '"nope" is not a configured topic' }]);
    const wild = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, topics: ['user.*'] });
    t.equal(wild.status, 201, 'a wildcard covering configured topics is accepted');
    t.equal(
      (await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, topics: ['nothing.*'] })).status,
      422,
      'a wildcard covering none is refused',
    );
    const star = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, topics: '*' });
    t.same(star.body.topics, ['*']);
  });

  t.test('list filters by type and topics in every multi-value form', async (t) => {
    await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, id: 'orders', topics: ['order.paid'] });
    await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.sqs, id: 'users-q', topics: ['user.created'] });
    const ids = async (qs: string) =>
      ((await call('GET', `/api/v1/tenants/acme/destinations?${qs}`)).body as { id: string }[]).map((d) => d.id).sort();
    t.same(await ids('type=sqs'), ['users-q']);
    t.ok((await ids('type=webhook&type=sqs')).includes('users-q'));
    t.ok((await ids('type[]=sqs')).includes('users-q'));
    t.ok((await ids('type[0]=sqs&type[1]=webhook')).includes('orders'));
    const byTopic = await ids('topics=order.paid');
    t.ok(byTopic.includes('orders'), 'exact topic');
    t.notOk(byTopic.includes('users-q'), 'other topic excluded');
    t.equal((await call('GET', '/api/v1/tenants/acme/destinations?type=carrier-pigeon')).status, 422);
  });

  t.test('filters are validated', async (t) => {
    const r = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, filter: { data: { amount: { $bogus: 1 } } } });
    t.equal(r.status, 422);
    t.ok(r.body.problems.some((p: { path: string }) => p.path.startsWith('body.filter')));
  });

  t.test('PATCH merges config, credentials, metadata and delivery_metadata; replaces filter; refuses type change', async (t) => {
    const d = (
      await call('POST', '/api/v1/tenants/acme/destinations', {
        ...VALID.webhook,
        id: 'p1',
        config: { url: 'https://example.com/a', custom_headers: { 'x-a': '1' } },
        metadata: { name: 'one', team: 'core' },
        delivery_metadata: { env: 'prod', region: 'eu' },
        filter: { data: { kind: 'a' } },
      })
    ).body;
    const url = '/api/v1/tenants/acme/destinations/p1';
    let r = await call('PATCH', url, { config: { url: 'https://example.com/b' } });
    t.same(r.body.config, { url: 'https://example.com/b', custom_headers: { 'x-a': '1' } }, 'update keeps siblings');
    r = await call('PATCH', url, { config: { custom_headers: { 'x-b': '2' } } });
    t.same(r.body.config.custom_headers, { 'x-a': '1', 'x-b': '2' }, 'add merges nested');
    r = await call('PATCH', url, { config: { custom_headers: null } });
    t.same(r.body.config, { url: 'https://example.com/b' }, 'null removes');
    r = await call('PATCH', url, { metadata: {} });
    t.same(r.body.metadata, { name: 'one', team: 'core' }, '{} is a no-op');
    r = await call('PATCH', url, { metadata: { team: null, owner: 'ada' } });
    t.same(r.body.metadata, { name: 'one', owner: 'ada' }, 'remove and add in one patch');
    r = await call('PATCH', url, { delivery_metadata: { region: null } });
    t.same(r.body.delivery_metadata, { env: 'prod' });
    r = await call('PATCH', url, { topics: ['user.created'] });
    t.same(r.body.filter, { data: { kind: 'a' } }, 'omitted filter unchanged');
    t.same(r.body.metadata, { name: 'one', owner: 'ada' }, 'omitted metadata unchanged');
    r = await call('PATCH', url, { filter: { topic: 'user.created' } });
    t.same(r.body.filter, { topic: 'user.created' }, 'filter replaced whole');
    r = await call('PATCH', url, { filter: {} });
    t.notOk(r.body.filter, '{} clears the filter');
    r = await call('PATCH', url, { filter: { topic: 'x' } });
    r = await call('PATCH', url, { filter: null });
    t.notOk(r.body.filter, 'null clears the filter');
    r = await call('PATCH', url, { type: 'sqs' });
    t.equal(r.status, 422, 'type is immutable');
    r = await call('PATCH', url, { config: { url: null } });
    t.equal(r.status, 422, 'removing a required field is refused');
    t.equal((await call('GET', url)).body.config.url, 'https://example.com/b', 'a refused patch changed nothing');
    t.equal(d.id, 'p1');
  });

  t.test('rate_limit: set on create, replaced or removed by PATCH, validated, served with the type schemas', async (t) => {
    const url = '/api/v1/tenants/acme/destinations/rl';
    let r = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, id: 'rl', rate_limit: { per_second: 10 } });
    t.equal(r.status, 201);
    t.same(r.body.rate_limit, { per_second: 10 });
    t.same((await call('GET', url)).body.rate_limit, { per_second: 10 }, 'stored');
    r = await call('PATCH', url, { rate_limit: { per_minute: 30 } });
    t.same(r.body.rate_limit, { per_minute: 30 }, 'replaced whole');
    r = await call('PATCH', url, { topics: ['user.created'] });
    t.same(r.body.rate_limit, { per_minute: 30 }, 'omitted: unchanged');
    r = await call('PATCH', url, { rate_limit: null });
    t.equal(r.status, 200);
    t.notOk('rate_limit' in r.body, 'null removes it');
    for (const bad of [{}, { per_second: 0 }, { per_second: 1.5 }, { per_minute: 600_001 }, { per_hour: 1 }, { per_second: 'ten' }, 5]) {
      const refused = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, rate_limit: bad });
      t.equal(refused.status, 422, `refused: ${JSON.stringify(bad)}`);
      t.ok(
        refused.body.problems.some((p: { path: string }) => p.path.includes('rate_limit')),
        `the problem names rate_limit: ${JSON.stringify(refused.body.problems)}`,
      );
      t.equal((await call('PATCH', url, { rate_limit: bad })).status, 422);
    }
    // A tenant sets it as the admin does.
    const token = (await call('GET', '/api/v1/acme/token')).body.token as string;
    const asTenant = await call('PATCH', url, { rate_limit: { per_second: 3 } }, token);
    t.same(asTenant.body.rate_limit, { per_second: 3 }, 'tenant token');
    const schema = (await call('GET', '/api/v1/destination-types/webhook')).body;
    t.equal(schema.controls.rate_limit.properties.per_second.maximum, 10_000);
    t.equal(schema.controls.rate_limit.properties.per_minute.maximum, 600_000);
  });

  t.test('ordered: set on create or PATCH, validated, served with the type schemas; its blocking delivery answered', async (t) => {
    const url = '/api/v1/tenants/acme/destinations/ord';
    let r = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, id: 'ord', ordered: true });
    t.equal(r.status, 201);
    t.equal(r.body.ordered, true);
    t.equal((await call('GET', url)).body.ordered, true, 'stored');
    r = await call('PATCH', url, { topics: ['user.created'] });
    t.equal(r.body.ordered, true, 'omitted: unchanged');
    t.same((await call('GET', `${url}/order`)).body, { ordered: true, blocked: null, waiting: 0 }, 'nothing blocks it');
    // What a sender writes while a delivery of it blocks: its block, and it and the later ones in the spill.
    await db('ordered_blocks').insert({
      tenant_id: 'acme',
      destination_id: 'ord',
      event_id: 'ev1',
      attempt_number: 2,
      next_attempt_at: new Date('2030-01-01T00:00:00Z'),
    });
    const spilled = (offset: number, event_id: string, delivery = '{"manual":false}') => ({
      tenant_id: 'acme',
      destination_id: 'ord',
      topic: 'deliveries.webhook',
      partition: 0,
      offset,
      type: 'webhook',
      event_id,
      delivery,
    });
    // 5 is the blocking delivery; 7, a manual retry of its event asked for meanwhile, waits behind it.
    await db('ordered_spill').insert([spilled(5, 'ev1'), spilled(6, 'ev2'), spilled(7, 'ev1', '{"manual":true}'), spilled(9, 'ev3')]);
    const order = (await call('GET', `${url}/order`)).body;
    t.match(order, {
      ordered: true,
      blocked: { event_id: 'ev1', attempt_number: 2, next_attempt_at: '2030-01-01T00:00:00.000Z', waiting: 3 },
      waiting: 3,
    });
    t.ok(Date.parse(order.blocked.since) > 0, 'since when');
    await db('ordered_blocks').where({ tenant_id: 'acme', destination_id: 'ord' }).delete();
    t.same((await call('GET', `${url}/order`)).body, { ordered: true, blocked: null, waiting: 4 }, 'unblocked, its spill draining');
    r = await call('PATCH', url, { ordered: false });
    t.equal(r.status, 200);
    t.notOk('ordered' in r.body, 'false: absent from the view');
    t.same(
      (await call('GET', `${url}/order`)).body,
      { ordered: false, blocked: null, waiting: 4 },
      'switched off: the spill still drains in order',
    );
    await db('ordered_spill').where({ tenant_id: 'acme', destination_id: 'ord' }).delete();
    for (const bad of ['yes', { on: true }]) {
      const refused = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, ordered: bad });
      t.equal(refused.status, 422, `refused: ${JSON.stringify(bad)}`);
      t.equal((await call('PATCH', url, { ordered: bad })).status, 422);
    }
    const token = (await call('GET', '/api/v1/acme/token')).body.token as string;
    t.equal((await call('PATCH', url, { ordered: true }, token)).body.ordered, true, 'tenant token');
    t.equal((await call('GET', '/api/v1/tenants/acme/destinations/nope/order')).status, 404);
    const schema = (await call('GET', '/api/v1/destination-types/webhook')).body;
    t.same(schema.controls.ordered.type, ['boolean', 'null'], 'served as accepted: null is the default');
    r = await call('PATCH', url, { ordered: true });
    t.equal(r.body.ordered, true);
    r = await call('PATCH', url, { ordered: null });
    t.equal(r.status, 200, 'null: back to the default');
    t.notOk('ordered' in r.body, 'false: absent from the view');
    await call('DELETE', url);
  });

  t.test('PATCH keeps masked credentials sent back unchanged, and rotates webhook secrets', async (t) => {
    const s3 = (await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.s3, id: 's3a' })).body;
    const back = await call('PATCH', '/api/v1/tenants/acme/destinations/s3a', {
      credentials: s3.credentials,
      config: { bucket: 'other-bucket' },
    });
    t.equal(back.status, 200);
    t.same(back.body.credentials, s3.credentials, 'masked value round-trips without overwriting the secret');
    const hook = (await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, id: 'rot' })).body;
    const rotated = await call('PATCH', '/api/v1/tenants/acme/destinations/rot', { credentials: { rotate_secret: true } });
    t.equal(rotated.body.credentials.previous_secret, hook.credentials.secret, 'old secret becomes previous');
    t.not(rotated.body.credentials.secret, hook.credentials.secret, 'a new secret');
    const validFor = Date.parse(rotated.body.credentials.previous_secret_invalid_at) - Date.now();
    t.ok(validFor > 23.9 * 3600_000 && validFor <= 24 * 3600_000, 'previous secret valid for 24 h');
    t.notOk('rotate_secret' in rotated.body.credentials, 'rotate_secret is not stored');
  });

  t.test('enable and disable in both path forms; creation already disabled', async (t) => {
    await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, id: 'ed' });
    const off = await call('PUT', '/api/v1/tenants/acme/destinations/ed/disable');
    t.ok(off.body.disabled_at);
    t.equal(
      (await call('PUT', '/api/v1/acme/destinations/ed/disable')).body.disabled_at,
      off.body.disabled_at,
      'disabling twice keeps the time',
    );
    t.equal((await call('PUT', '/api/v1/acme/destinations/ed/enable')).body.disabled_at, null);
    const pre = await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, disabled_at: '2026-01-01T00:00:00Z' });
    t.equal(pre.body.disabled_at, '2026-01-01T00:00:00.000Z');
  });

  t.test('delete, and 404s', async (t) => {
    await call('POST', '/api/v1/tenants/acme/destinations', { ...VALID.webhook, id: 'gone' });
    t.same((await call('DELETE', '/api/v1/acme/destinations/gone')).body, { success: true });
    t.equal((await call('GET', '/api/v1/tenants/acme/destinations/gone')).status, 404);
    t.equal((await call('DELETE', '/api/v1/tenants/acme/destinations/gone')).body.code, 'DESTINATION_NOT_FOUND');
    t.equal((await call('GET', '/api/v1/tenants/nobody/destinations')).body.code, 'TENANT_NOT_FOUND');
  });

  t.test('deleting a tenant deletes its destinations', async (t) => {
    await call('PUT', '/api/v1/tenants/temp');
    await call('POST', '/api/v1/tenants/temp/destinations', VALID.webhook);
    t.same((await call('DELETE', '/api/v1/temp')).body, { success: true });
    t.equal((await call('GET', '/api/v1/tenants/temp')).status, 404);
    await call('PUT', '/api/v1/tenants/temp');
    t.same((await call('GET', '/api/v1/tenants/temp/destinations')).body, [], 'no destinations survive');
  });

  t.test("a destination created again under its id has none of the deleted one's health or alerts", async (t) => {
    await call('PUT', '/api/v1/tenants/reborn');
    const create = () => call('POST', '/api/v1/tenants/reborn/destinations', { ...VALID.webhook, id: 'again' });
    t.equal((await create()).status, 201);
    // As the attempts service leaves them after four failures and an alert.
    await db('destination_health').insert({
      tenant_id: 'reborn',
      destination_id: 'again',
      consecutive_failures: 4,
      alerted_at: new Date(),
    });
    const alert = { tenant_id: 'reborn', destination_id: 'again', type: 'alert.consecutive_failure', time: new Date(), data: '{}' };
    await db('operator_events').insert({ ...alert, id: 'op1' });
    t.equal((await call('DELETE', '/api/v1/tenants/reborn/destinations/again')).status, 200);
    t.equal((await create()).status, 201);
    t.same(await db('destination_health').where({ tenant_id: 'reborn' }), [], 'its health starts anew');
    // Deleting the tenant erases its operator events with the rest, so one created again starts empty.
    t.equal((await call('DELETE', '/api/v1/tenants/reborn')).status, 200);
    t.equal((await call('PUT', '/api/v1/tenants/reborn')).status, 201);
    t.same(await db('operator_events').where({ tenant_id: 'reborn' }), [], 'no operator event survives');
  });
});

t.test('webhook specifics: reserved custom headers refused; an expired previous secret leaves the view', async (t) => {
  const { call } = await buildTestApp(t);
  await call('PUT', '/api/v1/tenants/acme');
  const bad = await call('POST', '/api/v1/tenants/acme/destinations', {
    ...VALID.webhook,
    config: {
      url: 'https://example.com/h',
      custom_headers: { 'Content-Type': 'text/plain', 'x-outpost-topic': 'x', 'x-fine': 'ok', 'x-bad': 'a\r\nb' },
    },
  });
  t.equal(bad.status, 422);
  t.same(bad.body.problems.map((p: { path: string }) => p.path).sort(), [
    'body.config.custom_headers.Content-Type',
    'body.config.custom_headers.x-bad',
    'body.config.custom_headers.x-outpost-topic',
  ]);
  const expired = await call('POST', '/api/v1/tenants/acme/destinations', {
    ...VALID.webhook,
    credentials: { secret: 'whsec_current', previous_secret: 'whsec_old', previous_secret_invalid_at: '2020-01-01T00:00:00Z' },
  });
  t.equal(expired.status, 201);
  t.same(expired.body.credentials, { secret: 'whsec_current' }, 'the expired previous secret is not shown');
  const live = await call('POST', '/api/v1/tenants/acme/destinations', {
    ...VALID.webhook,
    credentials: { secret: 'whsec_current', previous_secret: 'whsec_old', previous_secret_invalid_at: '2999-01-01T00:00:00Z' },
  });
  t.equal(live.body.credentials.previous_secret, 'whsec_old', 'a valid previous secret is shown');

  // A previous secret given without an end signs for 24 hours, on create as on rotation.
  const DAY = 24 * 3600 * 1000;
  const endsIn = (credentials: Record<string, string>) => Date.parse(credentials.previous_secret_invalid_at ?? '') - Date.now();
  const migrated = await call('POST', '/api/v1/tenants/acme/destinations', {
    ...VALID.webhook,
    credentials: { secret: 'whsec_current', previous_secret: 'whsec_old' },
  });
  t.equal(migrated.status, 201);
  t.ok(Math.abs(endsIn(migrated.body.credentials) - DAY) < 60_000, 'created with a previous secret: it ends 24 hours on');
  // One set on a destination whose earlier previous secret has ended signs from now on (it had not signed at all).
  const url = `/api/v1/tenants/acme/destinations/${expired.body.id}`;
  const again = await call('PATCH', url, { credentials: { previous_secret: 'whsec_older' } });
  t.equal(again.status, 200);
  t.equal(again.body.credentials.previous_secret, 'whsec_older', 'the new previous secret signs (and is shown)');
  t.ok(Math.abs(endsIn(again.body.credentials) - DAY) < 60_000, 'for 24 hours from the patch');
  const removed = await call('PATCH', url, { credentials: { previous_secret: null } });
  t.same(removed.body.credentials, { secret: 'whsec_current' }, 'removing it removes its end too');
});

// Inner shapes checked on create and PATCH: a pubsub endpoint as host:port
// or URL, a service account key file, a Service Bus connection string, the kafka type's brokers,
// mechanism and partition key template. Refusals are 422 and change nothing.
t.test('pubsub, servicebus and kafka field shapes', async (t) => {
  const { call } = await buildTestApp(t, { TOPICS: 'user.created' });
  await call('PUT', '/api/v1/tenants/acme');
  const create = (type: string, patch: { config?: object; credentials?: object }) =>
    call('POST', '/api/v1/tenants/acme/destinations', {
      ...VALID[type],
      config: { ...(VALID[type]?.config as object), ...patch.config },
      credentials: { ...(VALID[type]?.credentials as object), ...patch.credentials },
    });
  const refusedAt = async (res: Awaited<ReturnType<typeof create>>, path: string, why: string) => {
    t.equal(res.status, 422, `${why}: 422`);
    t.match(JSON.stringify(res.body), path, `${why}: names ${path}`);
  };

  t.test('pubsub endpoint: host:port as emulators take it, or a URL', async (t) => {
    for (const endpoint of [
      'localhost:8085',
      '127.0.0.1:8681',
      'pubsub-emulator.internal:8085',
      'pubsub_emulator:8085',
      'http://localhost:8085',
      'https://pubsub.example.com',
      'https://pubsub.example.com:443/',
    ]) {
      const r = await create('pubsub', { config: { endpoint } });
      t.equal(r.status, 201, `${endpoint} accepted`);
      t.equal(r.body.config?.endpoint, endpoint, 'kept as given');
    }
    // An IPv6 literal too: the client splits the endpoint at its first colon, so it could never connect.
    for (const endpoint of ['localhost', 'ftp://x:1', 'localhost:port', 'http://', 'a b:80', '[::1]:8085', 'http://[::1]:8085']) {
      await refusedAt(await create('pubsub', { config: { endpoint } }), 'body.config.endpoint', `${endpoint} refused`);
    }
  });

  t.test('pubsub service_account_json must be a service account key', async (t) => {
    const key = JSON.parse(SERVICE_ACCOUNT_JSON);
    const bad: Array<[string, string]> = [
      ['not json', 'not JSON'],
      ['[1,2]', 'a JSON array'],
      [JSON.stringify({ ...key, type: 'authorized_user' }), 'a user credential'],
      [JSON.stringify({ ...key, client_email: undefined }), 'no client_email'],
      [JSON.stringify({ ...key, private_key: undefined }), 'no private_key'],
      [JSON.stringify({ ...key, private_key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' }), 'an unreadable key'],
    ];
    for (const [service_account_json, why] of bad) {
      await refusedAt(await create('pubsub', { credentials: { service_account_json } }), 'body.credentials.service_account_json', why);
    }
    const before = (await call('GET', '/api/v1/tenants/acme/destinations?type=pubsub')).body.length;
    const ok = await create('pubsub', {});
    t.equal(ok.status, 201, 'a real key file is accepted');
    t.equal((await call('GET', '/api/v1/tenants/acme/destinations?type=pubsub')).body.length, before + 1, 'refusals created nothing');
    const patched = await call('PATCH', `/api/v1/tenants/acme/destinations/${ok.body.id}`, {
      credentials: { service_account_json: '{"type":"x"}' },
    });
    await refusedAt(patched, 'body.credentials.service_account_json', 'PATCH with a bad key');
    // The placeholder key: for an emulator (no TLS, no credentials sent), not for a TLS endpoint, where it signs every call.
    const placeholder = { service_account_json: '{"type":"service_account"}' };
    t.equal((await create('pubsub', { config: { endpoint: 'localhost:8085' }, credentials: placeholder })).status, 201, 'emulator');
    await refusedAt(
      await create('pubsub', { config: { endpoint: 'https://pubsub.internal:443' }, credentials: placeholder }),
      'body.credentials.service_account_json',
      'a placeholder key with a TLS endpoint',
    );
  });

  t.test('servicebus connection string names a key', async (t) => {
    await refusedAt(
      await create('servicebus', { credentials: { connection_string: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k' } }),
      'body.credentials.connection_string',
      'no SharedAccessKey',
    );
    t.equal(
      (
        await create('servicebus', {
          credentials: {
            connection_string: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessSignature=SharedAccessSignature sr=x&sig=y&se=1&skn=k',
          },
        })
      ).status,
      201,
      'a SAS token is accepted',
    );
  });

  t.test('kafka: brokers, mechanism, topic, template', async (t) => {
    const ok = await create('kafka', { config: { partition_key_template: 'data.customer_id', tls: false } });
    t.equal(ok.status, 201);
    t.equal(ok.body.target, 'b1.example.com:9093,b2.example.com:9093 -> events');
    t.not(ok.body.credentials.password, 'kafka-secret-123', 'the password is masked');
    await refusedAt(await create('kafka', { config: { brokers: 'no-port' } }), 'body.config.brokers', 'a broker without port');
    await refusedAt(await create('kafka', { config: { sasl_mechanism: 'gssapi' } }), 'body.config.sasl_mechanism', 'an unknown mechanism');
    await refusedAt(await create('kafka', { config: { topic: 'a/b' } }), 'body.config.topic', 'an invalid topic name');
    await refusedAt(
      await create('kafka', { config: { partition_key_template: 'data.[' } }),
      'body.config.partition_key_template',
      'a template that does not parse',
    );
    const schema = await call('GET', '/api/v1/destination-types/kafka');
    t.equal(schema.status, 200);
    t.same(
      schema.body.config_fields.map((f: { key: string }) => f.key),
      ['brokers', 'topic', 'sasl_mechanism', 'tls', 'partition_key_template'],
    );
    t.same(
      schema.body.credential_fields.map((f: { key: string }) => f.key),
      ['username', 'password'],
    );
  });
});
