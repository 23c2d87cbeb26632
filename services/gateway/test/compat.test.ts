// What existing clients of this contract send and expect: empty JSON bodies, merge-patch
// null, absent fields left out, 422 `data` as strings, and the other service's type names. Run
// against both databases the gateway runs on: Postgres (stack mode) and PGlite (embedded mode).
import t from 'tap';
import { uuidv7 } from '@switchyard/shared/ids.ts';
import { type Doc, openApiChecker } from '@switchyard/shared/testing/openapi.ts';
import { buildEmbeddedTestApp, buildTestApp, type TestApp } from './helpers.ts';

/** A failed first attempt row of `event_id` to `destination_id`, at `time`, as the attempts service stores one. */
const failedAttempt = (id: string, tenant_id: string, destination_id: string, event_id: string, time: Date) => ({
  id,
  tenant_id,
  destination_id,
  event_id,
  topic: 'user.created',
  status: 'failed',
  code: 'ERR',
  response_data: null,
  attempt_number: 1,
  manual: false,
  final: true,
  duration_ms: null,
  time,
  event_received_at: time,
});

const modes: Array<[string, (t: { teardown(fn: () => unknown): void }) => Promise<TestApp>]> = [
  ['stack (Postgres)', (t) => buildTestApp(t, { TOPICS: 'user.created,order.paid' })],
  ['embedded (PGlite)', (t) => buildEmbeddedTestApp(t, { TOPICS: 'user.created,order.paid' })],
];

for (const [mode, build] of modes) {
  t.test(mode, async (t) => {
    const built = await build(t);
    const { app, config, db } = built;
    // Every answer here is also checked against the served OpenAPI document.
    const openapi = openApiChecker((await built.call('GET', '/api/v1/openapi.json', undefined, null)).body as Doc);
    const call: TestApp['call'] = async (method, url, body, token) => {
      const r = await built.call(method, url, body, token);
      openapi.check(method, url, r.status, r.body);
      return r;
    };
    /** A request with `Content-Type: application/json` and no body at all, as SDKs send it. */
    const bare = async (method: 'PUT' | 'DELETE' | 'POST' | 'PATCH', url: string) => {
      const res = await app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${config.API_KEY}`, 'content-type': 'application/json' },
        payload: '',
      });
      const r = { status: res.statusCode, body: res.body ? res.json() : undefined };
      openapi.check(method, url, r.status, r.body);
      return r;
    };

    t.test('an empty JSON body is no body where the body is optional', async (t) => {
      t.equal((await bare('PUT', '/api/v1/tenants/empty-co')).status, 201, 'PUT /tenants/{id} creates');
      t.equal((await bare('PUT', '/api/v1/empty-co')).status, 200, 'and again, first form: 200');
      const d = await call('POST', '/api/v1/empty-co/destinations', {
        type: 'webhook',
        topics: '*',
        config: { url: 'https://e.example/h' },
      });
      t.equal(d.status, 201);
      t.match((await bare('PUT', `/api/v1/empty-co/destinations/${d.body.id}/disable`)).body, { disabled_at: String });
      t.match((await bare('PUT', `/api/v1/empty-co/destinations/${d.body.id}/enable`)).body, { disabled_at: null });
      t.same((await bare('DELETE', `/api/v1/tenants/empty-co/destinations/${d.body.id}`)).body, { success: true });
      t.same((await bare('DELETE', '/api/v1/tenants/empty-co')).body, { success: true }, 'DELETE tenant');
      // A route whose body is required still says so.
      const publish = await bare('POST', '/api/v1/publish');
      t.equal(publish.status, 400);
      t.match(publish.body, { code: 'INVALID_JSON', message: 'The request body is empty.' });
      t.equal((await bare('PATCH', `/api/v1/tenants/x/destinations/${d.body.id}`)).status, 400, 'PATCH needs a body');
    });

    t.test('merge patch: null removes a member (RFC 7396)', async (t) => {
      await call('PUT', '/api/v1/tenants/patch-co');
      const d = await call('POST', '/api/v1/tenants/patch-co/destinations', {
        type: 'webhook',
        topics: '*',
        config: { url: 'https://e.example/h', custom_headers: { 'x-a': '1' } },
        metadata: { name: 'main', team: 'core' },
        delivery_metadata: { region: 'eu', tier: 'gold' },
      });
      const url = `/api/v1/tenants/patch-co/destinations/${d.body.id}`;
      const keyOnly = await call('PATCH', url, { metadata: { team: null }, delivery_metadata: { tier: null } });
      t.same(keyOnly.body.metadata, { name: 'main' }, 'a key set to null is removed');
      t.same(keyOnly.body.delivery_metadata, { region: 'eu' });
      const whole = await call('PATCH', url, { metadata: null, delivery_metadata: null });
      t.equal(whole.status, 200);
      t.notOk('metadata' in whole.body, 'metadata: null removes the map');
      t.notOk('delivery_metadata' in whole.body, 'delivery_metadata: null removes the map');
      const got = await call('GET', url);
      t.notOk('metadata' in got.body || 'delivery_metadata' in got.body, 'and it stays removed');
      const headers = await call('PATCH', url, { config: { custom_headers: null } });
      t.same(headers.body.config, { url: 'https://e.example/h' }, 'a nested map set to null is removed from config');
      const noConfig = await call('PATCH', url, { config: null });
      t.equal(noConfig.status, 422, 'config: null removes config, so its required url is missing');
      t.match(noConfig.body.problems, [{ path: 'body.config.url', message: 'is required' }]);
      t.same((await call('PATCH', url, {})).body.config, { url: 'https://e.example/h' }, '{} changes nothing');
      const secret = got.body.credentials.secret;
      t.equal((await call('PATCH', url, { credentials: null })).body.credentials.secret, secret, 'credentials: null keeps the secret');
    });

    t.test('422: data lists human-readable strings, problems keeps the structure', async (t) => {
      await call('PUT', '/api/v1/tenants/err-co');
      const r = await call('POST', '/api/v1/tenants/err-co/destinations', { type: 'pigeon', topics: '*' });
      t.equal(r.status, 422);
      t.equal(r.body.code, 'VALIDATION_FAILED');
      t.ok(
        r.body.data.every((s: unknown) => typeof s === 'string'),
        'every entry of data is a string',
      );
      t.match(r.body.data, [/^body\.type must be one of webhook, sqs, /]);
      t.match(r.body.problems, [{ path: 'body.type', message: /^must be one of / }]);
      t.equal(r.body.data.length, r.body.problems.length);
      const q = await call('GET', '/api/v1/tenants/err-co/attempts?limit=0&status=maybe');
      t.same(q.body.data.sort(), [
        'query.limit must be an integer from 1 to 1000',
        'query.status must be one of success, failed, canceled (got "maybe")',
      ]);
    });

    t.test("the other service's type names are accepted as input; answers use interface.md's", async (t) => {
      await call('PUT', '/api/v1/tenants/alias-co');
      const cases: Array<[string, string, Record<string, unknown>]> = [
        [
          'aws_sqs',
          'sqs',
          { config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' }, credentials: { key: 'AKIA1', secret: 'sqs-secret-1234' } },
        ],
        [
          'aws_kinesis',
          'kinesis',
          { config: { stream_name: 's', region: 'us-east-1' }, credentials: { key: 'AKIA1', secret: 'kin-secret-1234' } },
        ],
        [
          'aws_s3',
          's3',
          { config: { bucket: 'my-bucket', region: 'us-east-1' }, credentials: { key: 'AKIA1', secret: 's3-secret-12345' } },
        ],
        [
          'azure_servicebus',
          'servicebus',
          {
            config: { name: 'q' },
            credentials: { connection_string: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=abc' },
          },
        ],
        ['hookdeck', 'gateway', { credentials: { token: Buffer.from('src_test123:test_signing_key').toString('base64') } }],
      ];
      for (const [alias, type, rest] of cases) {
        const created = await call('POST', '/api/v1/tenants/alias-co/destinations', { type: alias, topics: '*', ...rest });
        t.equal(created.status, 201, `${alias} accepted: ${JSON.stringify(created.body.data ?? '')}`);
        t.equal(created.body.type, type, `${alias} answered as ${type}`);
        const patched = await call('PATCH', `/api/v1/tenants/alias-co/destinations/${created.body.id}`, { type: alias });
        t.equal(patched.status, 200, `PATCH with type ${alias} is no change of type`);
        const listed = await call('GET', `/api/v1/tenants/alias-co/destinations?type=${alias}`);
        t.same(
          listed.body.map((x: { type: string }) => x.type),
          [type],
          `?type=${alias} lists ${type}`,
        );
        t.equal((await call('GET', `/api/v1/destination-types/${alias}`)).body.type, type);
      }
      t.equal((await call('GET', '/api/v1/destination-types/gcp_pubsub')).body.type, 'pubsub');
      t.equal((await call('GET', '/api/v1/tenants/alias-co/destinations?type=carrier_pigeon')).status, 422);
    });

    t.test('absent optional fields are left out, not null', async (t) => {
      await call('PUT', '/api/v1/tenants/omit-co');
      const d = await call('POST', '/api/v1/tenants/omit-co/destinations', {
        type: 'webhook',
        topics: '*',
        config: { url: 'https://e.example/h' },
      });
      const time = new Date();
      await db('events').insert({
        tenant_id: 'omit-co',
        id: 'evt-omit',
        topic: 'user.created',
        time,
        metadata: null,
        data: JSON.stringify({ a: 1 }),
        eligible_for_retry: true,
        destination_id: null,
        received_at: time,
        matched_destination_ids: [d.body.id],
      });
      await db('attempts').insert(failedAttempt(uuidv7(time.getTime()), 'omit-co', d.body.id, 'evt-omit', time));
      const list = await call('GET', `/api/v1/tenants/omit-co/destinations/${d.body.id}/attempts?include=event.data`);
      const [a] = list.body.models;
      t.match(a.event, { id: 'evt-omit', data: { a: 1 } }, 'the event is embedded');
      t.notOk('destination_id' in a.event, 'an event published to no one destination has no destination_id');
      t.notOk('response_data' in a || 'duration_ms' in a, 'an attempt without response data or duration leaves them out');
      for (const [k, v] of Object.entries({ ...a, ...a.event })) t.not(v, null, `${k} is not null`);
      const ev = await call('GET', '/api/v1/tenants/omit-co/events/evt-omit');
      t.notOk('successful_at' in ev.body, 'no successful delivery: successful_at is left out');
      t.notOk('destination_id' in ev.body);
      const listed = await call('GET', '/api/v1/tenants/omit-co/events');
      t.notOk(Object.values(listed.body.models[0]).includes(null), 'listed events carry no null');
    });

    t.test("the filters the other service's SDK sends are taken", async (t) => {
      // As @hookdeck/outpost-sdk 1.6.0 writes them: arrays repeat the name, types by its names.
      await call('PUT', '/api/v1/tenants/sdk-co');
      await call('PUT', '/api/v1/tenants/sdk-other');
      const dest = async (tenant: string, body: Record<string, unknown>) =>
        (await call('POST', `/api/v1/tenants/${tenant}/destinations`, { topics: '*', ...body })).body.id as string;
      const sqs = await dest('sdk-co', {
        type: 'aws_sqs',
        config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' },
        credentials: { key: 'AKIA1', secret: 'sqs-secret-1234' },
      });
      const hook = await dest('sdk-co', { type: 'webhook', config: { url: 'https://e.example/h' } });
      const elsewhere = await dest('sdk-other', { type: 'webhook', config: { url: 'https://e.example/h' } });
      const attempt: Record<string, string> = {};
      for (const [i, [tenant, destination]] of (
        [
          ['sdk-co', sqs],
          ['sdk-co', hook],
          ['sdk-other', elsewhere],
        ] as const
      ).entries()) {
        const time = new Date(Date.now() - 60_000 + i * 1000);
        const id = `evt-sdk-${i}`;
        await db('events').insert({
          tenant_id: tenant,
          id,
          topic: 'user.created',
          time,
          metadata: null,
          data: JSON.stringify({ i }),
          eligible_for_retry: true,
          destination_id: null,
          received_at: time,
          matched_destination_ids: [destination],
        });
        attempt[id] = uuidv7(time.getTime());
        await db('attempts').insert(failedAttempt(attempt[id], tenant, destination, id, time));
      }
      const list = async (url: string) => {
        const r = await call('GET', url);
        t.equal(r.status, 200, url);
        return (r.body.models as { id: string }[]).map((m) => m.id);
      };
      t.same(await list('/api/v1/events?id=evt-sdk-0&id=evt-sdk-2&tenant_id=sdk-co'), ['evt-sdk-0'], 'events by id');
      t.same(await list('/api/v1/events?id=evt-sdk-2'), ['evt-sdk-2'], 'events by id, every tenant');
      t.same(await list('/api/v1/attempts?tenant_id=sdk-co&destination_type=aws_sqs'), [attempt['evt-sdk-0']], 'attempts by type');
      t.same(
        await list('/api/v1/attempts?tenant_id=sdk-co&tenant_id=sdk-other&destination_type=webhook&destination_type=aws_sqs&limit=10'),
        ['evt-sdk-2', 'evt-sdk-1', 'evt-sdk-0'].map((e) => attempt[e]),
        'several types, several tenants',
      );
      t.same(await list('/api/v1/attempts?tenant_id=sdk-other&destination_type=sqs'), [], 'no destination of the type');
      t.same(await list('/api/v1/tenants?id=sdk-co&limit=5&dir=asc'), ['sdk-co'], 'tenants by id');
      const one = await call('GET', `/api/v1/attempts/${attempt['evt-sdk-0']}?tenant_id=sdk-co&include=event&include=destination`);
      t.equal(one.status, 200);
      t.match(one.body, { tenant_id: 'sdk-co', event: { id: 'evt-sdk-0' }, destination: { id: sqs } });
      const another = await call('GET', `/api/v1/attempts/${attempt['evt-sdk-0']}?tenant_id=sdk-other`);
      t.equal(another.status, 404);
      t.equal(another.body.code, 'ATTEMPT_NOT_FOUND');
      const bad = await call('GET', '/api/v1/attempts?destination_type=aws_sns');
      t.equal(bad.status, 422);
      t.same(bad.body.data, ['query.destination_type "aws_sns" is not a destination type']);
    });

    t.test('every answer matches the served OpenAPI document', async (t) => {
      t.ok(openapi.checked > 40, `${openapi.checked} answers`);
      t.same(openapi.problems, []);
    });
  });
}
