// API_TYPE_NAMES=outpost: every answer that carries a destination type carries the other service's
// name (aws_sqs, gcp_pubsub, hookdeck, ...), so that its clients, which check every answer against
// their own enumeration, read ours; input takes both names. And a Pub/Sub destination with an
// emulator endpoint takes a placeholder key, as that service's test configurations send it. Run
// against both databases the gateway runs on: Postgres (stack mode) and PGlite (embedded mode).
// The default (auto) does the same for requests from that service's SDKs alone.
import t from 'tap';
import { PipelineStore } from '@switchyard/shared/db/stores/pipeline.ts';
import { uuidv7 } from '@switchyard/shared/ids.ts';
import { type Doc, openApiChecker } from '@switchyard/shared/testing/openapi.ts';
import { buildEmbeddedTestApp, buildTestApp, type TestApp } from './helpers.ts';

const SETTINGS = { TOPICS: 'user.created', API_TYPE_NAMES: 'outpost' };
const modes: Array<[string, (t: { teardown(fn: () => unknown): void }) => Promise<TestApp>]> = [
  ['stack (Postgres)', (t) => buildTestApp(t, SETTINGS)],
  ['embedded (PGlite)', (t) => buildEmbeddedTestApp(t, SETTINGS)],
];

/** A valid create body of each type the other service names differently, under our name. */
const BODIES: Array<[string, string, Record<string, unknown>]> = [
  [
    'sqs',
    'aws_sqs',
    { config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' }, credentials: { key: 'AKIA1', secret: 'sqs-secret-1234' } },
  ],
  [
    'kinesis',
    'aws_kinesis',
    { config: { stream_name: 's', region: 'us-east-1' }, credentials: { key: 'AKIA1', secret: 'kin-secret-1234' } },
  ],
  ['s3', 'aws_s3', { config: { bucket: 'my-bucket', region: 'us-east-1' }, credentials: { key: 'AKIA1', secret: 's3-secret-12345' } }],
  [
    'servicebus',
    'azure_servicebus',
    {
      config: { name: 'q' },
      credentials: { connection_string: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=abc' },
    },
  ],
  [
    'pubsub',
    'gcp_pubsub',
    {
      config: { project_id: 'my-project', topic: 'events', endpoint: 'localhost:8085' },
      credentials: { service_account_json: '{"type":"service_account"}' },
    },
  ],
  ['gateway', 'hookdeck', { credentials: { token: Buffer.from('src_test123:test_signing_key').toString('base64') } }],
];

for (const [mode, build] of modes) {
  t.test(mode, async (t) => {
    const built = await build(t);
    const doc = (await built.call('GET', '/api/v1/openapi.json', undefined, null)).body as Doc & {
      components: { schemas: Record<string, { properties: { type: { enum: string[] } } }> };
    };
    // Every answer here is also checked against the served document, whose enumerations follow the setting.
    const openapi = openApiChecker(doc);
    const call: TestApp['call'] = async (method, url, body, token) => {
      const r = await built.call(method, url, body, token);
      t.same(openapi.check(method, url, r.status, r.body), [], `${method} ${url}: as documented`);
      return r;
    };
    const outpostNames = ['webhook', 'aws_sqs', 'rabbitmq', 'hookdeck', 'aws_kinesis', 'azure_servicebus', 'aws_s3', 'gcp_pubsub', 'kafka'];

    t.test('the document enumerates the names answers carry', async (t) => {
      t.same(doc.components.schemas.Destination?.properties.type.enum, outpostNames);
      t.same(doc.components.schemas.DestinationTypeSchema?.properties.type.enum, outpostNames);
    });

    t.test('destination answers: create, read, list, patch, disable, under either name', async (t) => {
      await call('PUT', '/api/v1/tenants/names-co');
      for (const [ours, theirs, rest] of BODIES) {
        for (const given of [ours, theirs]) {
          const created = await call('POST', '/api/v1/tenants/names-co/destinations', { type: given, topics: '*', ...rest });
          t.equal(created.status, 201, `${given} created: ${JSON.stringify(created.body.data ?? '')}`);
          t.equal(created.body.type, theirs, `created as ${given}, answered as ${theirs}`);
          const url = `/api/v1/tenants/names-co/destinations/${created.body.id}`;
          t.equal((await call('GET', url)).body.type, theirs, 'GET');
          t.equal((await call('PATCH', url, { type: theirs, metadata: { k: 'v' } })).body.type, theirs, 'PATCH, naming its own type');
          t.equal((await call('PUT', `${url}/disable`)).body.type, theirs, 'disable');
          t.equal((await call('PUT', `${url}/enable`)).body.type, theirs, 'enable');
        }
        for (const filter of [ours, theirs]) {
          const listed = await call('GET', `/api/v1/tenants/names-co/destinations?type=${filter}`);
          t.same(
            listed.body.map((d: { type: string }) => d.type),
            [theirs, theirs],
            `?type=${filter} lists both, as ${theirs}`,
          );
        }
      }
      const all = (await call('GET', '/api/v1/names-co/destinations')).body as Array<{ type: string }>;
      t.equal(all.length, BODIES.length * 2);
      t.ok(
        all.every((d) => outpostNames.includes(d.type) && !['sqs', 'kinesis', 's3', 'servicebus', 'pubsub', 'gateway'].includes(d.type)),
        'the list, other path form: no name of ours',
      );
    });

    t.test('destination type schemas', async (t) => {
      const list = (await call('GET', '/api/v1/destination-types')).body as Array<{ type: string }>;
      t.same(
        list.map((s) => s.type),
        outpostNames,
      );
      for (const [ours, theirs] of BODIES) {
        t.equal((await call('GET', `/api/v1/destination-types/${ours}`)).body.type, theirs, `/destination-types/${ours}`);
        t.equal((await call('GET', `/api/v1/names-co/destination-types/${theirs}`)).body.type, theirs, `/destination-types/${theirs}`);
      }
      // Asked twice: the renaming never alters the registry's schemas behind later answers.
      t.same(
        ((await call('GET', '/api/v1/destination-types')).body as Array<{ type: string }>).map((s) => s.type),
        outpostNames,
      );
    });

    t.test("attempts with their destination; a `type` in event data is the event's own", async (t) => {
      await call('PUT', '/api/v1/tenants/att-co');
      const d = await call('POST', '/api/v1/tenants/att-co/destinations', { type: 'sqs', topics: '*', ...BODIES[0]?.[2] });
      const time = new Date(Date.now() - 60_000).toISOString();
      const event = {
        id: 'evt_named',
        tenant_id: 'att-co',
        topic: 'user.created',
        time,
        eligible_for_retry: true,
        metadata: null,
        data: { type: 'sqs' },
        received_at: time,
      };
      const store = new PipelineStore(built.db);
      await store.storeRouted([{ event, matched_destination_ids: [d.body.id], skipped_destination_ids: [] }]);
      await store.storeAttempts([
        {
          id: uuidv7(),
          tenant_id: 'att-co',
          destination_id: d.body.id,
          destination_type: 'sqs',
          event_id: event.id,
          topic: event.topic,
          event_time: time,
          event_received_at: time,
          status: 'success',
          code: 'OK',
          response_data: {},
          attempt_number: 1,
          manual: false,
          time: new Date().toISOString(),
          duration_ms: 3,
          final: true,
        },
      ]);
      const page = await call('GET', '/api/v1/tenants/att-co/attempts?include=destination&include=event.data');
      t.equal(page.status, 200);
      t.equal(page.body.models[0]?.destination?.type, 'aws_sqs', 'the attempt’s destination');
      t.same(page.body.models[0]?.event?.data, { type: 'sqs' }, 'event data untouched');
      const one = await call('GET', `/api/v1/att-co/attempts/${page.body.models[0].id}?include=destination`);
      t.equal(one.body.destination?.type, 'aws_sqs', 'one attempt');
      const perDestination = await call('GET', `/api/v1/tenants/att-co/destinations/${d.body.id}/attempts?include=destination`);
      t.equal(perDestination.body.models[0]?.destination?.type, 'aws_sqs', 'a destination’s attempts');
    });

    t.test('Pub/Sub: a key that is a JSON object with a type, as the peer checks it', async (t) => {
      await call('PUT', '/api/v1/tenants/emu-co');
      const create = (config: Record<string, unknown>, service_account_json: string) =>
        call('POST', '/api/v1/tenants/emu-co/destinations', {
          type: 'gcp_pubsub',
          topics: '*',
          config: { project_id: 'test-project', topic: 'events', ...config },
          credentials: { service_account_json },
        });
      const placeholder = '{"type":"service_account","projectId":"test"}';
      for (const endpoint of ['localhost:8085', 'http://127.0.0.1:8681', 'https://pubsub.example.com']) {
        const ok = await create({ endpoint }, placeholder);
        t.equal(ok.status, 201, `endpoint ${endpoint}: a placeholder key is accepted`);
      }
      const refused = async (config: Record<string, unknown>, key: string, why: string) => {
        const r = await create(config, key);
        t.equal(r.status, 422, why);
        t.match(r.body.problems, [{ path: 'body.credentials.service_account_json' }], `${why}: names the key`);
      };
      await refused({ endpoint: 'localhost:8085' }, '{"projectId":"test"}', 'with an endpoint, an object without type is refused');
      await refused({ endpoint: 'localhost:8085' }, 'not-valid-json', 'with an endpoint, not JSON is refused');
      await refused({ endpoint: 'localhost:8085' }, '["service_account"]', 'with an endpoint, an array is refused');
      // Answering as the peer does, its key check too: without an endpoint, an object with a type will do
      // (the peer's own test suite saves such keys); the default's strict check is tested below.
      t.equal((await create({}, placeholder)).status, 201, 'without an endpoint, as the peer: a placeholder key is accepted');
      await refused({}, '{"projectId":"test"}', 'without an endpoint, an object without type is refused');
      const emu = await create({ endpoint: 'localhost:8085' }, placeholder);
      const patched = await call('PATCH', `/api/v1/tenants/emu-co/destinations/${emu.body.id}`, { config: { endpoint: null } });
      t.equal(patched.status, 200, 'PATCH removing the endpoint keeps the placeholder key, as the peer does');
    });
  });
}

t.test('the default: interface.md’s names', async (t) => {
  const { call } = await buildEmbeddedTestApp(t, { TOPICS: 'user.created' });
  await call('PUT', '/api/v1/tenants/plain-co');
  const d = await call('POST', '/api/v1/tenants/plain-co/destinations', { type: 'aws_sqs', topics: '*', ...BODIES[0]?.[2] });
  t.equal(d.body.type, 'sqs');
  t.equal((await call('GET', '/api/v1/destination-types/gcp_pubsub')).body.type, 'pubsub');
  // The strict key check: without an endpoint, a key Google would refuse is refused on save.
  const pubsub = (config: Record<string, unknown>) =>
    call('POST', '/api/v1/tenants/plain-co/destinations', {
      type: 'pubsub',
      topics: '*',
      config: { project_id: 'test-project', topic: 'events', ...config },
      credentials: { service_account_json: '{"type":"service_account","projectId":"test"}' },
    });
  t.equal((await pubsub({})).status, 422, 'without an endpoint, a placeholder key is refused');
  t.equal((await pubsub({ endpoint: 'localhost:8085' })).status, 201, 'with one, it is accepted');
  const doc = (await call('GET', '/api/v1/openapi.json', undefined, null)).body;
  t.same(doc.components.schemas.Destination.properties.type.enum, [
    'webhook',
    'sqs',
    'rabbitmq',
    'gateway',
    'kinesis',
    'servicebus',
    's3',
    'pubsub',
    'kafka',
  ]);
});

/** What the other service's generated SDKs send (TypeScript, Python, Go). */
const PEER_SDK_AGENTS = [
  'speakeasy-sdk/typescript 1.6.0 2.938.0 0.0.1 @hookdeck/outpost-sdk',
  'speakeasy-sdk/python 1.5.0 2.924.0 0.0.1 outpost_sdk',
  'speakeasy-sdk/go 1.5.0 2.918.4 0.0.1 github.com/hookdeck/outpost/sdks/outpost-go',
];

t.test('the default (auto): the other service’s SDKs read its names, every other client ours', async (t) => {
  const { call } = await buildEmbeddedTestApp(t, { TOPICS: 'user.created' });
  await call('PUT', '/api/v1/tenants/auto-co');
  const d = await call('POST', '/api/v1/tenants/auto-co/destinations', { type: 'sqs', topics: '*', ...BODIES[0]?.[2] });
  const url = `/api/v1/tenants/auto-co/destinations/${d.body.id}`;
  for (const agent of PEER_SDK_AGENTS) {
    const as = (method: string, path: string, body?: unknown) => call(method, path, body, undefined, { 'user-agent': agent });
    const got = await as('GET', url);
    t.equal(got.body.type, 'aws_sqs', `${agent}: GET`);
    t.match(got.headers.vary, /User-Agent/, `${agent}: the answer varies by User-Agent`);
    t.same(
      ((await as('GET', '/api/v1/tenants/auto-co/destinations')).body as Array<{ type: string }>).map((x) => x.type),
      ['aws_sqs'],
      `${agent}: the list`,
    );
    t.equal((await as('GET', '/api/v1/destination-types/sqs')).body.type, 'aws_sqs', `${agent}: a type schema`);
    t.equal((await as('PATCH', url, { type: 'aws_sqs', metadata: { k: 'v' } })).body.type, 'aws_sqs', `${agent}: PATCH`);
  }
  for (const agent of ['curl/8.5.0', 'Mozilla/5.0 (X11; Linux x86_64)', 'python-requests/2.32 (outpost-sdk-user)']) {
    const got = await call('GET', url, undefined, undefined, { 'user-agent': agent });
    t.equal(got.body.type, 'sqs', `${agent}: interface.md's name`);
    t.match(got.headers.vary, /User-Agent/, `${agent}: the answer varies by User-Agent`);
  }
  t.equal((await call('GET', url)).body.type, 'sqs', 'no User-Agent: interface.md’s name');
  // The peer's key check follows the names: its SDKs' placeholder Pub/Sub key is accepted for them alone.
  const pubsub = { type: 'gcp_pubsub', topics: '*', config: { project_id: 'test-project', topic: 'events' } };
  const credentials = { service_account_json: '{"type":"service_account","projectId":"test"}' };
  const [peer] = PEER_SDK_AGENTS;
  const forPeer = await call('POST', '/api/v1/tenants/auto-co/destinations', { ...pubsub, credentials }, undefined, {
    'user-agent': peer ?? '',
  });
  t.equal(forPeer.status, 201, 'the peer SDK: its placeholder key, as the peer checks it');
  t.equal(forPeer.body.type, 'gcp_pubsub');
  const forOthers = await call('POST', '/api/v1/tenants/auto-co/destinations', { ...pubsub, credentials }, undefined, {
    'user-agent': 'curl/8.5.0',
  });
  t.equal(forOthers.status, 422, 'any other client: the strict check');
});

t.test('API_TYPE_NAMES=switchyard: interface.md’s names even for the other service’s SDKs', async (t) => {
  const { call } = await buildEmbeddedTestApp(t, { TOPICS: 'user.created', API_TYPE_NAMES: 'switchyard' });
  await call('PUT', '/api/v1/tenants/ours-co');
  const d = await call('POST', '/api/v1/tenants/ours-co/destinations', { type: 'aws_sqs', topics: '*', ...BODIES[0]?.[2] });
  const got = await call('GET', `/api/v1/tenants/ours-co/destinations/${d.body.id}`, undefined, undefined, {
    'user-agent': PEER_SDK_AGENTS[0] ?? '',
  });
  t.equal(got.body.type, 'sqs');
  t.notOk(String(got.headers.vary ?? '').includes('User-Agent'), 'no Vary on User-Agent: every client reads the same');
});
