import t from 'tap';
import { RESERVED_TENANT_IDS } from '../src/routes/tenants.ts';
import { buildEmbeddedTestApp } from './helpers.ts';

/** Every method a client may send that the router knows of. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'] as const;

/** A concrete path of a route pattern: a tenant id that is no fixed path, an id for any other parameter. */
const concrete = (url: string) =>
  url
    .split('/')
    .map((s) => (s === ':tenant_id' ? 'acme' : s.startsWith(':') ? 'x1' : s === '*' ? 'x' : s))
    .join('/');

t.test('a known path with a method it lacks: 405 with Allow, for every route the app registers', async (t) => {
  const { app } = await buildEmbeddedTestApp(t);
  await app.ready();
  const byUrl = new Map<string, Set<string>>();
  for (const r of app.routeTable) {
    const set = byUrl.get(r.url) ?? new Set<string>();
    set.add(r.method);
    byUrl.set(r.url, set);
  }
  t.ok(byUrl.size > 20, `the route table lists the API (${byUrl.size} paths)`);
  let checked = 0;
  for (const [url, methods] of byUrl) {
    if (methods.has('GET')) methods.add('HEAD');
    const allow = [...methods].sort().join(', ');
    const path = concrete(url);
    for (const method of METHODS) {
      if (methods.has(method)) continue;
      // No credential: which methods a path has is no secret, and the answer comes before authentication.
      const res = await app.inject({ method, url: path });
      const where = `${method} ${path} (route ${url})`;
      t.equal(res.statusCode, 405, where);
      t.equal(res.headers.allow, allow, `${where}: Allow`);
      if (method !== 'HEAD') t.match(res.json(), { status: 405, code: 'METHOD_NOT_ALLOWED', message: String }, `${where}: error shape`);
      checked++;
    }
  }
  t.ok(checked > 100, `${checked} path and method pairs answered 405`);
});

t.test('fixed paths are not taken for tenant ids by the alias routes', async (t) => {
  const { app, call } = await buildEmbeddedTestApp(t);
  const del = await call('DELETE', '/api/v1/topics');
  t.equal(del.status, 405, 'DELETE /api/v1/topics is a method topics lacks, not a tenant "topics"');
  t.same(del.body.code, 'METHOD_NOT_ALLOWED');
  const res = await app.inject({ method: 'PUT', url: '/api/v1/publish', headers: { authorization: 'Bearer test-admin-key' } });
  t.equal(res.statusCode, 405);
  t.equal(res.headers.allow, 'POST');
  // A reserved id that names no path under /api/v1 is still refused as a tenant id.
  t.notOk(
    app.routeTable.some((r) => r.url === '/api/v1/docs'),
    'no route /api/v1/docs',
  );
  const reserved = await call('PUT', '/api/v1/docs');
  t.equal(reserved.status, 422);
  t.equal(reserved.body.code, 'TENANT_ID_RESERVED');
  t.ok(RESERVED_TENANT_IDS.has('topics'));
  // Real tenants keep every alias route.
  t.equal((await call('PUT', '/api/v1/acme')).status, 201);
  t.equal((await call('DELETE', '/api/v1/acme')).status, 200);
});

t.test('a path no route has is 404 NOT_FOUND, whatever the method', async (t) => {
  const { app } = await buildEmbeddedTestApp(t);
  for (const method of ['GET', 'TRACE', 'DELETE'] as const) {
    const res = await app.inject({ method, url: '/api/v1/acme/no/such/path' });
    t.equal(res.statusCode, 404, method);
    t.equal(res.headers.allow, undefined);
    t.match(res.json(), { status: 404, code: 'NOT_FOUND' });
  }
});

t.test("with CORS on, the preflight route (every path's OPTIONS) makes no path known", async (t) => {
  const { app } = await buildEmbeddedTestApp(t, { CORS_ALLOWED_ORIGINS: 'https://app.example' });
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/topics',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
  });
  t.equal(preflight.statusCode, 204, 'preflights are answered');
  const missing = await app.inject({ method: 'GET', url: '/api/v1/acme/no/such/path' });
  t.equal(missing.statusCode, 404, 'an unknown path is still 404');
  const del = await app.inject({ method: 'DELETE', url: '/api/v1/topics' });
  t.equal(del.statusCode, 405);
  t.equal(del.headers.allow, 'GET, HEAD');
});
