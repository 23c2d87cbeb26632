// The portal's pages as the gateway serves them (built assets in a temporary directory), and CORS.
// The app itself is tested in a real browser: services/portal/test/.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createCipher } from '@switchyard/shared/crypto.ts';
import { createDb } from '@switchyard/shared/db/index.ts';
import type { BusProducer } from '@switchyard/shared/bus/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import { testConfig } from '@switchyard/shared/testing/index.ts';
import { build } from '../src/app.ts';

const INDEX =
  '<!doctype html><html><head><link rel="icon" href="/portal/favicon.svg" /><title>Event destinations</title></head><body></body></html>';

async function gateway(t: { teardown(fn: () => unknown): void }, overrides: Record<string, string>, portal: 'built' | 'missing' = 'built') {
  const base = process.env.SWITCHYARD_TEST_RUN ?? tmpdir();
  const dir = mkdtempSync(join(base, 'gateway-portal-'));
  const assets = join(dir, 'dist');
  if (portal === 'built') {
    mkdirSync(join(assets, 'assets'), { recursive: true });
    writeFileSync(join(assets, 'index.html'), INDEX);
    writeFileSync(join(assets, 'assets', 'app-1234.js'), 'console.log(1)');
  }
  const config = testConfig({ DATABASE_URL: '', ...overrides });
  // Nothing here reaches the database: a pool that never connects (port 1) proves it.
  const db = createDb({ url: 'postgres://nobody@127.0.0.1:1/none', poolMax: 1 });
  const refuse = async () => {
    throw new Error('no Kafka here');
  };
  const producer: BusProducer = { send: refuse, sendMany: refuse, close: async () => {} };
  const app = await build(config, {
    db,
    producer,
    logger: createLogger('gateway-test', 'silent'),
    cipher: createCipher(config.AES_ENCRYPTION_SECRET),
    portalDir: assets,
  });
  t.teardown(async () => {
    await app.close();
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  return { app, config };
}

t.test('the portal pages: index with branding for every client-side route, assets, no credential needed', async (t) => {
  const { app } = await gateway(t, {
    PORTAL_ORGANIZATION_NAME: 'Acme </script><b>',
    PORTAL_BRAND_COLOR: '#6d28d9',
    PORTAL_FAVICON_URL: 'https://acme.example/favicon.ico',
    PORTAL_REFERER_URL: 'https://acme.example/settings',
    PORTAL_FORCE_THEME: 'dark',
  });
  for (const url of [
    '/portal',
    '/portal/',
    '/portal/?token=x.y.z&theme=dark',
    '/portal/destinations/d1/deliveries',
    // Destination ids may end like a file name or hold an @: still pages, when reloaded too.
    '/portal/destinations/orders.v2',
    '/portal/destinations/billing%40acme.io',
    '/portal/destinations/orders.v2/attempts/a1.json',
    '/portal/index.html',
  ]) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200, `${url} answers the app`);
    t.match(res.headers['content-type'], /^text\/html/);
    t.equal(res.headers['referrer-policy'], 'no-referrer', 'the token in the URL never leaves in a Referer');
    t.equal(res.headers['cache-control'], 'no-store');
    t.match(res.headers['content-security-policy'], /script-src 'self'/);
  }
  const html = (await app.inject({ method: 'GET', url: '/portal/' })).body;
  const json = /<script id="portal-settings" type="application\/json">(.*?)<\/script>/.exec(html)?.[1] ?? '';
  t.notMatch(json, /<\/script>/i, 'the settings cannot close their script element');
  t.same(JSON.parse(json), {
    organizationName: 'Acme </script><b>',
    brandColor: '#6d28d9',
    logo: '',
    logoDark: '',
    favicon: 'https://acme.example/favicon.ico',
    forceTheme: 'dark',
    returnUrl: 'https://acme.example/settings',
  });
  t.match(html, '<title>Acme &#60;/script&#62;&#60;b&#62; · Event destinations</title>', 'the title is escaped');
  t.match(html, '<link rel="icon" href="https://acme.example/favicon.ico">', 'the favicon is replaced');

  const asset = await app.inject({ method: 'GET', url: '/portal/assets/app-1234.js' });
  t.equal(asset.statusCode, 200);
  t.equal(asset.body, 'console.log(1)');
  t.match(asset.headers['content-type'], /javascript/);
  t.match(asset.headers['cache-control'], /immutable/, 'hashed assets are cached for good');
  const missing = await app.inject({ method: 'GET', url: '/portal/assets/nope.js' });
  t.equal(missing.statusCode, 404, 'a missing asset is a 404, not the app');
  t.equal((await app.inject({ method: 'GET', url: '/portal/assets/..%2f..%2fpackage.json' })).statusCode, 404, 'no path traversal');
  const outside = await app.inject({ method: 'GET', url: '/portal/..%2f..%2fpackage.json' });
  t.notMatch(outside.body, /"name"/, 'a path outside assets/ is never a file');

  const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as { paths: Record<string, unknown> };
  t.notOk(
    Object.keys(doc.paths).some((p) => p.startsWith('/portal')),
    'the pages are not API operations',
  );
  t.notOk(
    app.routeTable.some((r) => r.url.startsWith('/portal')),
    'nor in the route table',
  );
});

t.test('an unbuilt portal says how to build it', async (t) => {
  const { app } = await gateway(t, {}, 'missing');
  const res = await app.inject({ method: 'GET', url: '/portal/' });
  t.equal(res.statusCode, 503);
  t.match(res.body, 'npm run build -w @switchyard/portal');
});

t.test('CORS: allowed origins may call the API with a bearer token; others get no CORS headers', async (t) => {
  const { app, config } = await gateway(t, { CORS_ALLOWED_ORIGINS: 'https://app.example,https://admin.example' });
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/destinations',
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type',
    },
  });
  t.equal(preflight.statusCode, 204, 'the preflight needs no credential');
  t.equal(preflight.headers['access-control-allow-origin'], 'https://app.example');
  t.match(String(preflight.headers['access-control-allow-headers']), /authorization/);
  t.match(String(preflight.headers['access-control-allow-methods']), /PATCH/);

  const call = await app.inject({
    method: 'GET',
    url: '/api/v1/topics',
    headers: { origin: 'https://admin.example', authorization: `Bearer ${config.API_KEY}` },
  });
  t.equal(call.statusCode, 200);
  t.equal(call.headers['access-control-allow-origin'], 'https://admin.example');

  const other = await app.inject({
    method: 'GET',
    url: '/api/v1/topics',
    headers: { origin: 'https://evil.example', authorization: `Bearer ${config.API_KEY}` },
  });
  t.equal(other.headers['access-control-allow-origin'], undefined, 'an origin not listed is not allowed');
  const unauthenticated = await app.inject({ method: 'GET', url: '/api/v1/topics', headers: { origin: 'https://app.example' } });
  t.equal(unauthenticated.statusCode, 401, 'CORS grants no access by itself');
});

t.test('CORS is off by default', async (t) => {
  const { app, config } = await gateway(t, {});
  const res = await app.inject({
    method: 'GET',
    url: '/api/v1/topics',
    headers: { origin: 'https://app.example', authorization: `Bearer ${config.API_KEY}` },
  });
  t.equal(res.headers['access-control-allow-origin'], undefined);
});
