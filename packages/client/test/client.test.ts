// The typed client against a real gateway (Postgres, Kafka) on a loopback port: tenants,
// destinations, errors, and the cursor iterator.
import t from 'tap';
import { buildTestApp } from '@switchyard/gateway/test/helpers.ts';
import { ApiError, createSwitchyardClient, items, ok, pages } from '../src/index.ts';

t.test('typed client round trip', async (t) => {
  const { app, config } = await buildTestApp(t, { TOPICS: 'user.created' });
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  const api = createSwitchyardClient({ baseUrl, token: config.API_KEY });

  const created = await api.PUT('/api/v1/tenants/{tenant_id}', { params: { path: { tenant_id: 'acme' } } });
  t.equal(created.response.status, 201, 'an upsert without a body');
  t.equal(created.data?.id, 'acme');
  const again = await ok(
    api.PUT('/api/v1/tenants/{tenant_id}', { params: { path: { tenant_id: 'acme' } }, body: { metadata: { plan: 'pro' } } }),
  );
  t.same(again.metadata, { plan: 'pro' });

  const dest = await ok(
    api.POST('/api/v1/tenants/{tenant_id}/destinations', {
      params: { path: { tenant_id: 'acme' } },
      body: { type: 'webhook', topics: ['user.created'], config: { url: 'https://example.com/hook' }, metadata: { name: 'main' } },
    }),
  );
  t.equal(dest.type, 'webhook');
  const patched = await ok(
    api.PATCH('/api/v1/tenants/{tenant_id}/destinations/{destination_id}', {
      params: { path: { tenant_id: 'acme', destination_id: dest.id } },
      body: { metadata: null },
    }),
  );
  t.notOk('metadata' in patched, 'merge patch null');

  const invalid = await api.POST('/api/v1/tenants/{tenant_id}/destinations', {
    params: { path: { tenant_id: 'acme' } },
    body: { type: 'webhook', topics: ['nope'], config: {} },
  });
  t.equal(invalid.response.status, 422);
  t.match(invalid.error?.data, ['body.config.url is required', 'body.topics "nope" is not a configured topic']);
  await t.rejects(ok(api.GET('/api/v1/tenants/{tenant_id}', { params: { path: { tenant_id: 'nobody' } } })), ApiError);

  // What an error answer carries: the body in the error shape, the headers, Retry-After read.
  const answer = (status: number, body: string, headers: Record<string, string>) => ({
    error: body.startsWith('{') ? JSON.parse(body) : body,
    response: new Response(body, { status, headers }),
  });
  const busy = await ok(answer(503, '{"status":503,"code":"SERVICE_UNAVAILABLE","message":"Busy."}', { 'retry-after': '2' })).catch(
    (e: unknown) => e,
  );
  t.ok(busy instanceof ApiError);
  t.match(busy, { status: 503, body: { code: 'SERVICE_UNAVAILABLE' }, retryAfterSeconds: 2 });
  const later = new Date(Date.now() + 30_000).toUTCString();
  const dated = (await ok(answer(429, '{"status":429,"code":"RATE_LIMITED","message":"Slow."}', { 'retry-after': later })).catch(
    (e: unknown) => e,
  )) as ApiError;
  t.ok(dated.retryAfterSeconds !== undefined && dated.retryAfterSeconds > 20 && dated.retryAfterSeconds <= 30, 'an HTTP date too');
  const proxy = (await ok(answer(502, 'Bad Gateway', {})).catch((e: unknown) => e)) as ApiError;
  t.same(
    [proxy.status, proxy.body, proxy.retryAfterSeconds, proxy.message],
    [502, undefined, undefined, 'HTTP 502'],
    'not the error shape: no body',
  );

  // The cursor iterator walks every tenant, two a page.
  for (const id of ['b1', 'b2', 'b3', 'b4']) await ok(api.PUT('/api/v1/tenants/{tenant_id}', { params: { path: { tenant_id: id } } }));
  const page = (next: string | undefined) => ok(api.GET('/api/v1/tenants', { params: { query: { limit: 2, ...(next ? { next } : {}) } } }));
  const seen: string[] = [];
  for await (const tenant of items(page)) seen.push(tenant.id);
  t.same([...seen].sort(), ['acme', 'b1', 'b2', 'b3', 'b4'], 'every tenant once');
  let count = 0;
  for await (const p of pages(page)) {
    count++;
    t.ok(p.models.length <= 2);
  }
  t.equal(count, 3, 'three pages of at most two');
});
