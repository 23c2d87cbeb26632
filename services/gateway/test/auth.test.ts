import { SignJWT } from 'jose';
import t from 'tap';
import { cursorAt } from '@switchyard/shared/db/paging.ts';
import { buildTestApp } from './helpers.ts';

t.test('tenant tokens', async (t) => {
  const { call, config } = await buildTestApp(t, { API_BASE_URL: 'https://hooks.example.com' });
  await call('PUT', '/api/v1/tenants/acme');
  await call('PUT', '/api/v1/tenants/other');
  const other = await call('POST', '/api/v1/tenants/other/destinations', {
    type: 'webhook',
    topics: '*',
    config: { url: 'https://example.com/o' },
  });

  const issued = await call('GET', '/api/v1/acme/token');
  t.equal(issued.status, 200);
  t.equal(issued.body.tenant_id, 'acme');
  const token: string = issued.body.token;
  const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());
  t.equal(claims.sub, 'acme');
  t.equal(claims.exp - claims.iat, 24 * 3600, 'valid for 24 h');
  t.ok(claims.iss, 'has an issuer');

  t.test('own tenant: both path forms and the inferred form', async (t) => {
    t.equal((await call('GET', '/api/v1/tenants/acme', undefined, token)).status, 200);
    t.equal((await call('GET', '/api/v1/acme/destinations', undefined, token)).status, 200);
    const created = await call(
      'POST',
      '/api/v1/destinations',
      { type: 'webhook', topics: '*', config: { url: 'https://example.com/mine' } },
      token,
    );
    t.equal(created.status, 201, 'tenant inferred from the token');
    t.equal(created.body.tenant_id, 'acme');
    t.equal((await call('GET', '/api/v1/destinations', undefined, token)).body.length, 1);
  });

  t.test('another tenant is 403', async (t) => {
    t.equal((await call('GET', '/api/v1/tenants/other', undefined, token)).status, 403);
    t.equal((await call('GET', `/api/v1/tenants/other/destinations/${other.body.id}`, undefined, token)).status, 403);
    t.equal((await call('POST', '/api/v1/publish', { tenant_id: 'other', topic: 't', data: {} }, token)).status, 403);
    // Named in tenant_id beside its own tenant in the path: refused, not ignored.
    for (const listing of ['events', 'attempts']) {
      const r = await call('GET', `/api/v1/tenants/acme/${listing}?tenant_id=other`, undefined, token);
      t.equal(r.status, 403, `${listing}?tenant_id=other with its own tenant in the path`);
      const admin = await call('GET', `/api/v1/tenants/acme/${listing}?tenant_id=other`);
      t.equal(admin.status, 422, `admin: ${listing}?tenant_id= another tenant than the path's`);
      t.equal(admin.body.problems?.[0]?.path, 'query.tenant_id');
      t.equal((await call('GET', `/api/v1/tenants/acme/${listing}?tenant_id=acme`)).status, 200, 'the same tenant again: read');
    }
  });

  t.test('admin-only routes are 403', async (t) => {
    for (const [method, url] of [
      ['PUT', '/api/v1/tenants/acme'],
      ['DELETE', '/api/v1/tenants/acme'],
      ['GET', '/api/v1/acme/token'],
      ['GET', '/api/v1/acme/portal'],
      ['GET', '/api/v1/tenants'],
    ] as const) {
      const r = await call(method, url, undefined, token);
      t.equal(r.status, 403, `${method} ${url}`);
      t.equal(r.body.code, 'FORBIDDEN');
    }
  });

  t.test('the credential is answered before the request: 403 whatever the body or query', async (t) => {
    for (const [method, url, body] of [
      ['POST', '/api/v1/publish', {}],
      ['POST', '/api/v1/publish/batch', { events: 'none' }],
      ['GET', '/api/v1/tenants?foo=1', undefined],
      ['GET', '/api/v1/tenants?limit=0', undefined],
      ['GET', '/api/v1/acme/portal?theme=blue', undefined],
      ['PUT', '/api/v1/tenants/acme', { a: 1 }],
      ['GET', '/api/v1/tenants/other/attempts?limit=0', undefined],
      ['GET', '/api/v1/tenants/other/events?bogus=1', undefined],
      ['PATCH', `/api/v1/tenants/other/destinations/${other.body.id}`, { type: 5 }],
    ] as const) {
      const r = await call(method, url, body, token);
      t.equal(r.status, 403, `${method} ${url} ${JSON.stringify(body ?? '')}`);
      t.equal(r.body.code, 'FORBIDDEN');
    }
  });

  t.test('a tenant token may rotate but not set the webhook secret', async (t) => {
    const d = await call(
      'POST',
      '/api/v1/destinations',
      { type: 'webhook', topics: '*', config: { url: 'https://example.com/x' }, credentials: { secret: 'whsec_mine' } },
      token,
    );
    t.equal(d.status, 422);
    t.match(d.body.problems, [{ path: 'body.credentials.secret' }]);
    const ok = await call(
      'POST',
      '/api/v1/destinations',
      { type: 'webhook', topics: '*', config: { url: 'https://example.com/y' } },
      token,
    );
    const rot = await call('PATCH', `/api/v1/destinations/${ok.body.id}`, { credentials: { rotate_secret: true } }, token);
    t.equal(rot.status, 200);
    t.equal(rot.body.credentials.previous_secret, ok.body.credentials.secret);
    for (const key of ['secret', 'previous_secret', 'previous_secret_invalid_at']) {
      const r = await call('PATCH', `/api/v1/destinations/${ok.body.id}`, { credentials: { [key]: 'x' } }, token);
      t.equal(r.status, 422, `${key} refused`);
    }
    const admin = await call('POST', '/api/v1/tenants/acme/destinations', {
      type: 'webhook',
      topics: '*',
      config: { url: 'https://example.com/z' },
      credentials: { secret: 'whsec_chosen' },
    });
    t.equal(admin.body.credentials.secret, 'whsec_chosen', 'the admin key may set it');
  });

  t.test('expired, forged and malformed tokens are 401', async (t) => {
    const key = new TextEncoder().encode(config.API_JWT_SECRET);
    const past = Math.floor(Date.now() / 1000) - 25 * 3600;
    const expired = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(claims.iss)
      .setSubject('acme')
      .setIssuedAt(past)
      .setExpirationTime(past + 24 * 3600)
      .sign(key);
    t.equal((await call('GET', '/api/v1/tenants/acme', undefined, expired)).status, 401, 'expired');
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(claims.iss)
      .setSubject('acme')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('wrong-secret-wrong-secret'));
    t.equal((await call('GET', '/api/v1/tenants/acme', undefined, forged)).status, 401, 'wrong key');
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"acme"}').toString('base64url')}.`;
    t.equal((await call('GET', '/api/v1/tenants/acme', undefined, none)).status, 401, 'alg none');
  });

  t.test('portal URL carries a token for the tenant', async (t) => {
    const r = await call('GET', '/api/v1/tenants/acme/portal?theme=dark');
    t.equal(r.status, 200);
    const url = new URL(r.body.redirect_url);
    t.equal(url.origin, 'https://hooks.example.com');
    t.equal(url.pathname, '/portal');
    t.equal(url.searchParams.get('theme'), 'dark');
    const portalToken = url.searchParams.get('token') as string;
    t.equal((await call('GET', '/api/v1/tenants/acme', undefined, portalToken)).status, 200, 'the token works');
    t.equal(r.body.tenant_id, 'acme');
  });
});

t.test('without API_BASE_URL, portal links and the OpenAPI server name the port bound (API_PORT 0 picks one)', async (t) => {
  const { app, call } = await buildTestApp(t, { API_PORT: '0', API_HOST: '127.0.0.1' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  t.ok(port > 0);
  await call('PUT', '/api/v1/tenants/acme');
  const portal = await call('GET', '/api/v1/tenants/acme/portal');
  t.equal(new URL(portal.body.redirect_url).origin, `http://127.0.0.1:${port}`, 'the portal link');
  const doc = await call('GET', '/api/v1/openapi.json');
  t.same(
    doc.body.servers.map((s: { url: string }) => s.url),
    [`http://127.0.0.1:${port}`],
    "the document's server",
  );
});

t.test('admin tenant listing is cursor-paged', async (t) => {
  const { call } = await buildTestApp(t);
  for (let i = 0; i < 5; i++) await call('PUT', `/api/v1/tenants/tenant-${i}`);
  const first = await call('GET', '/api/v1/tenants?limit=2&dir=asc');
  t.same(
    first.body.models.map((m: { id: string }) => m.id),
    ['tenant-0', 'tenant-1'],
  );
  t.equal(first.body.pagination.prev, null, 'no prev on the first page');
  const second = await call('GET', `/api/v1/tenants?limit=2&dir=asc&next=${first.body.pagination.next}`);
  t.same(
    second.body.models.map((m: { id: string }) => m.id),
    ['tenant-2', 'tenant-3'],
  );
  const third = await call('GET', `/api/v1/tenants?limit=2&dir=asc&next=${second.body.pagination.next}`);
  t.same(
    third.body.models.map((m: { id: string }) => m.id),
    ['tenant-4'],
  );
  t.equal(third.body.pagination.next, null, 'no next on the last page');
  const back = await call('GET', `/api/v1/tenants?limit=2&dir=asc&prev=${third.body.pagination.prev}`);
  t.same(
    back.body.models.map((m: { id: string }) => m.id),
    ['tenant-2', 'tenant-3'],
  );
  // A cursor followed without dir keeps the direction it was issued for, as on the other listings.
  const followed = await call('GET', `/api/v1/tenants?limit=2&next=${first.body.pagination.next}`);
  t.same(
    followed.body.models.map((m: { id: string }) => m.id),
    ['tenant-2', 'tenant-3'],
    'next of an asc page without dir: the next page, ascending',
  );
  t.equal(followed.body.pagination.dir, 'asc');
  const against = await call('GET', `/api/v1/tenants?limit=2&dir=desc&next=${first.body.pagination.next}`);
  t.equal(against.status, 422, 'a dir other than the cursor is refused');
  t.equal(against.body.problems?.[0]?.path, 'query.dir');
  t.equal((await call('GET', '/api/v1/tenants?next=garbage')).status, 422);
  const attemptCursor = cursorAt('att', 'asc', 'next', '2026-01-01T00:00:00.000000Z', '0190a000-0000-7000-8000-000000000000');
  t.equal((await call('GET', `/api/v1/tenants?next=${attemptCursor}`)).status, 422, "another listing's cursor is refused");
  t.equal((await call('GET', '/api/v1/tenants?limit=0')).status, 422);
});

t.test('admin tenant listing: the id filter, one id or several, in every form', async (t) => {
  const { call } = await buildTestApp(t);
  for (let i = 0; i < 5; i++) await call('PUT', `/api/v1/tenants/tenant-${i}`);
  const listed = async (q: string) => {
    const r = await call('GET', `/api/v1/tenants?dir=asc&${q}`);
    t.equal(r.status, 200, q);
    return r.body.models.map((m: { id: string }) => m.id);
  };
  t.same(await listed('id=tenant-3'), ['tenant-3'], 'one id');
  for (const q of ['id=tenant-1&id=tenant-3', 'id[]=tenant-3&id[]=tenant-1', 'id[0]=tenant-1&id[1]=tenant-3', 'id=tenant-3,tenant-1'])
    t.same(await listed(q), ['tenant-1', 'tenant-3'], `several: ${q}`);
  t.same(await listed('id=tenant-2&id=nope'), ['tenant-2'], 'an unknown id adds nothing');
  t.same(await listed('id=nope'), [], 'no such tenant: nothing');
  // Paged within the filter.
  const first = await call('GET', '/api/v1/tenants?dir=asc&limit=2&id=tenant-0,tenant-2,tenant-4');
  t.same(
    first.body.models.map((m: { id: string }) => m.id),
    ['tenant-0', 'tenant-2'],
  );
  const second = await call('GET', `/api/v1/tenants?dir=asc&limit=2&id=tenant-0,tenant-2,tenant-4&next=${first.body.pagination.next}`);
  t.same(
    second.body.models.map((m: { id: string }) => m.id),
    ['tenant-4'],
  );
  t.equal(second.body.pagination.next, null, 'the filter ends the listing');

  const bad = await call('GET', '/api/v1/tenants?id=tenant-1,a%20b');
  t.equal(bad.status, 422);
  t.equal(bad.body.code, 'VALIDATION_FAILED');
  t.match(bad.body.problems, [{ path: 'query.id', message: /1-255 characters.*"a b"/ }]);
  const token: string = (await call('GET', '/api/v1/tenants/tenant-1/token')).body.token;
  t.equal((await call('GET', '/api/v1/tenants?id=tenant-1', undefined, token)).status, 403, 'admin only, filtered or not');
});
