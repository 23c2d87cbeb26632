// One event end to end, every service its own process, through the real Kafka broker and Postgres.
import t from 'tap';
import {
  apiClient,
  createTestDatabase,
  freePort,
  startReceiver,
  startService,
  testEnv,
  waitFor,
} from '@switchyard/shared/testing/index.ts';

t.test('an event published over HTTP reaches the webhook and its attempt is readable', async (t) => {
  const port = await freePort();
  const env = testEnv({ DATABASE_URL: await createTestDatabase(t), API_PORT: String(port), TOPICS: 'user.created,user.deleted' });
  // The attempts service migrates first; the others would wait on knex's migration lock anyway.
  await startService(t, 'attempts', env);
  await Promise.all([startService(t, 'router', env), startService(t, 'sender', env), startService(t, 'gateway', env)]);
  const receiver = await startReceiver(t);
  const api = apiClient(`http://127.0.0.1:${port}`, env.API_KEY as string);

  t.equal((await api('PUT', '/api/v1/tenants/acme')).status, 201, 'tenant created');
  const dest = await api<{ id: string; credentials: { secret: string } }>('POST', '/api/v1/tenants/acme/destinations', {
    type: 'webhook',
    topics: ['user.created'],
    config: { url: `${receiver.url}/hook` },
  });
  t.equal(dest.status, 201, 'destination created');
  t.match(dest.body.credentials.secret, /^whsec_/, 'a signing secret was generated');

  const published = await api<{ id: string; duplicate: boolean; destination_ids: string[] }>('POST', '/api/v1/publish', {
    tenant_id: 'acme',
    topic: 'user.created',
    eligible_for_retry: true,
    metadata: { source: 'e2e' },
    data: { user_id: 'u_1', name: 'Ada' },
  });
  t.equal(published.status, 202, 'publish accepted');
  t.same(published.body.destination_ids, [dest.body.id], 'publish names the matching destination');

  const delivered = await waitFor('the webhook POST', () => receiver.requests[0]);
  t.equal(delivered.method, 'POST');
  t.equal(delivered.url, '/hook');
  t.same(JSON.parse(delivered.body), { user_id: 'u_1', name: 'Ada' }, 'body is the event data');
  t.equal(delivered.headers['x-outpost-event-id'], published.body.id, 'event id header');
  t.equal(delivered.headers['x-outpost-topic'], 'user.created', 'topic header');
  t.equal(delivered.headers['x-outpost-source'], 'e2e', 'event metadata header');
  t.ok(delivered.headers['webhook-signature'], 'request is signed');

  const attempts = await waitFor('the stored attempt', async () => {
    const r = await api<{ models: Array<Record<string, unknown>> }>('GET', `/api/v1/tenants/acme/destinations/${dest.body.id}/attempts`);
    return r.body.models.length ? r.body : undefined;
  });
  t.equal(attempts.models.length, 1, 'one attempt');
  t.match(attempts.models[0], {
    event_id: published.body.id,
    destination_id: dest.body.id,
    status: 'success',
    code: '200',
    attempt_number: 1,
    manual: false,
  });
  t.equal(receiver.requests.length, 1, 'delivered exactly once');
});
