// One event end to end, every service its own process, through the real Kafka broker and Postgres.
import t from 'tap';
import { ok } from '@switchyard/client';
import { startReceiver, startStack, waitFor } from '@switchyard/shared/testing/index.ts';
import { e2eClient } from './client.ts';

t.test('an event published over HTTP reaches the webhook and its attempt is readable', async (t) => {
  // The attempts service migrates first; the others would wait on knex's migration lock anyway.
  const { env, base } = await startStack(t, { TOPICS: 'user.created,user.deleted' });
  const receiver = await startReceiver(t);
  const { api, openapi } = await e2eClient(base, env.API_KEY as string);
  const acme = { params: { path: { tenant_id: 'acme' } } };

  t.equal((await api.PUT('/api/v1/tenants/{tenant_id}', acme)).response.status, 201, 'tenant created');
  const created = await api.POST('/api/v1/tenants/{tenant_id}/destinations', {
    ...acme,
    body: { type: 'webhook', topics: ['user.created'], config: { url: `${receiver.url}/hook` } },
  });
  t.equal(created.response.status, 201, 'destination created');
  const dest = await ok(created);
  t.match(dest.credentials.secret, /^whsec_/, 'a signing secret was generated');

  const publishing = await api.POST('/api/v1/publish', {
    body: {
      tenant_id: 'acme',
      topic: 'user.created',
      eligible_for_retry: true,
      metadata: { source: 'e2e' },
      data: { user_id: 'u_1', name: 'Ada' },
    },
  });
  t.equal(publishing.response.status, 202, 'publish accepted');
  const published = await ok(publishing);
  t.same(published.destination_ids, [dest.id], 'publish names the matching destination');

  const delivered = await waitFor('the webhook POST', () => receiver.requests[0]);
  t.equal(delivered.method, 'POST');
  t.equal(delivered.url, '/hook');
  t.same(JSON.parse(delivered.body), { user_id: 'u_1', name: 'Ada' }, 'body is the event data');
  t.equal(delivered.headers['x-outpost-event-id'], published.id, 'event id header');
  t.equal(delivered.headers['x-outpost-topic'], 'user.created', 'topic header');
  t.equal(delivered.headers['x-outpost-source'], 'e2e', 'event metadata header');
  t.ok(delivered.headers['webhook-signature'], 'request is signed');

  const attempts = await waitFor('the stored attempt', async () => {
    const page = await ok(
      api.GET('/api/v1/tenants/{tenant_id}/destinations/{destination_id}/attempts', {
        params: { path: { tenant_id: 'acme', destination_id: dest.id }, query: { include: 'event.data' } },
      }),
    );
    return page.models.length ? page : undefined;
  });
  t.equal(attempts.models.length, 1, 'one attempt');
  t.match(attempts.models[0], {
    event_id: published.id,
    destination_id: dest.id,
    status: 'success',
    code: '200',
    attempt_number: 1,
    manual: false,
  });
  t.same(attempts.models[0]?.event?.data, { user_id: 'u_1', name: 'Ada' }, 'the attempt embeds its event');
  t.equal(receiver.requests.length, 1, 'delivered exactly once');
  t.same(openapi.problems, [], `all ${openapi.checked} answers match the served OpenAPI document`);
});
