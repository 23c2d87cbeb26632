// Hostile and unlucky input at the gateway: every probe answers a 4xx in the documented
// shape and changes nothing; never a 5xx, never a retryable answer to a request that cannot succeed.
// Gate checks run on both databases (Postgres, and PGlite as embedded mode runs it); publishing
// needs Kafka, so its acceptance is checked on the first.
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { SignJWT } from 'jose';
import t, { type Test } from 'tap';
import { buildEmbeddedTestApp, buildTestApp, type TestApp } from './helpers.ts';

const H = { authorization: 'Bearer test-admin-key', 'content-type': 'application/json' };
const post = (app: TestApp['app'], url: string, payload: string, method: 'POST' | 'PATCH' | 'PUT' = 'POST') =>
  app.inject({ method, url, headers: H, payload });
const is422 = (t: Test, res: { statusCode: number; json(): any }, path: RegExp | string, what: string) => {
  t.equal(res.statusCode, 422, what);
  const body = res.json();
  t.equal(body.code, 'VALIDATION_FAILED', `${what}: code`);
  t.match(JSON.stringify(body.data), path, `${what}: names the field`);
};

for (const [mode, make] of [
  ['postgres', buildTestApp],
  ['pglite', buildEmbeddedTestApp],
] as const) {
  t.test(`gate probes (${mode})`, async (t) => {
    const { app, call } = await make(t);
    t.equal((await call('PUT', '/api/v1/tenants/acme')).status, 201);
    const dest = await call('POST', '/api/v1/tenants/acme/destinations', {
      type: 'webhook',
      topics: '*',
      config: { url: 'https://example.com/h' },
    });
    t.equal(dest.status, 201);

    t.test('NUL and lone surrogates in ids, paths, query values and bodies: 422 with the path', async (t) => {
      for (const [method, url, path] of [
        ['PUT', '/api/v1/tenants/a%00b', 'params.tenant_id'],
        ['GET', '/api/v1/tenants/acme/events?tenant_id=a%00b', 'query.tenant_id'],
        ['GET', '/api/v1/attempts?event_id=a%00b', 'query.event_id'],
        ['GET', '/api/v1/tenants/acme/events/e%00x', 'params.event_id'],
        ['GET', `/api/v1/tenants/acme/destinations/${dest.body.id}%00`, 'params.destination_id'],
        ['GET', '/api/v1/tenants/acme/destinations?type=webhook%00', 'query.type'],
        ['GET', '/api/v1/tenants/acme/events?status=%ED%A0%80', 'query.status'],
      ] as const) {
        const res = await app.inject({ method, url, headers: { authorization: H.authorization } });
        is422(t, res, path, `${method} ${url}`);
      }
      for (const [url, body, path] of [
        ['/api/v1/publish', '{"id":"e\\u0000","tenant_id":"acme","topic":"user.created","data":{}}', 'body.id'],
        ['/api/v1/publish', '{"tenant_id":"acme","topic":"user.created","data":{"a":"\\u0000"}}', 'body.data.a'],
        ['/api/v1/publish', '{"tenant_id":"acme","topic":"user.created","metadata":{"m":"\\ud800"},"data":{}}', 'body.metadata.m'],
        ['/api/v1/retry', `{"event_id":"e\\u0000","destination_id":"${dest.body.id}"}`, 'body.event_id'],
        [
          '/api/v1/tenants/acme/destinations',
          '{"type":"webhook","topics":"*","config":{"url":"https://example.com/h"},"metadata":{"k":"\\u0000"}}',
          'body.metadata.k',
        ],
        [
          '/api/v1/tenants/acme/destinations',
          '{"type":"webhook","topics":"*","config":{"url":"https://example.com/h"},"filter":{"data":{"a":"\\u0000"}}}',
          'body.filter.data.a',
        ],
      ] as const) {
        is422(t, await post(app, url, body), path, `${url} ${body}`);
      }
      is422(t, await post(app, '/api/v1/tenants/acme', '{"metadata":{"k":"\\u0000"}}', 'PUT'), 'body.metadata.k', 'tenant metadata');
      const batch = await post(
        app,
        '/api/v1/publish/batch',
        '{"events":[{"tenant_id":"acme","topic":"user.created","data":{"a":"\\u0000"}}]}',
      );
      t.equal(batch.statusCode, 200, 'a batch answers per item');
      t.equal(batch.json().results[0].status, 422);
      t.match(JSON.stringify(batch.json().results[0].data), 'body.events[0].data.a');
    });

    t.test('nesting past the limit is 422 with a clear message, not a retryable 503', async (t) => {
      const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
      is422(
        t,
        await post(app, '/api/v1/publish', `{"tenant_id":"acme","topic":"user.created","data":${deep(5000)}}`),
        /nests deeper than 64 levels/,
        'publish',
      );
      is422(
        t,
        await post(
          app,
          '/api/v1/tenants/acme/destinations',
          `{"type":"webhook","topics":"*","config":{"url":"https://example.com/h"},"filter":${deep(100)}}`,
        ),
        /nests deeper than 64 levels/,
        'destination filter',
      );
    });

    t.test('router-level errors answer the documented shape', async (t) => {
      const bad = await app.inject({ method: 'GET', url: '/api/v1/tenants/%FF%FE', headers: { authorization: H.authorization } });
      t.equal(bad.statusCode, 400);
      t.same(bad.json(), { status: 400, code: 'BAD_REQUEST', message: 'The path is not valid percent-encoded UTF-8.' });
      const long = await app.inject({
        method: 'GET',
        url: `/api/v1/tenants/${'a'.repeat(300)}`,
        headers: { authorization: H.authorization },
      });
      is422(t, long, 'params', 'an over-long path parameter');
    });

    t.test('bodies are taken as sent: a wrong JSON type is 422, never converted', async (t) => {
      const publish = { tenant_id: 'acme', topic: 'user.created', data: {} };
      const hook = { type: 'webhook', topics: '*', config: { url: 'https://example.com/h' } };
      const dests = '/api/v1/tenants/acme/destinations';
      for (const [url, body, path, message] of [
        // Not a list of one, nor text that a later check refuses for something else.
        [
          '/api/v1/tenants/acme/replay',
          { since: '2026-01-01T00:00:00Z', status: 'failed' },
          'body.status',
          'must be an array, not a string',
        ],
        [dests, { ...hook, id: 'as-sent', topics: 'user.created' }, 'body.topics', 'must be "*" or a non-empty array of strings'],
        [dests, { ...hook, id: 'as-sent', type: 5 }, 'body.type', 'must be a string, not a number'],
        [dests, { ...hook, id: 'as-sent', disabled_at: true }, 'body.disabled_at', 'must be a string or null, not a boolean'],
        ['/api/v1/publish', { ...publish, delay_seconds: true }, 'body.delay_seconds', 'must be an integer, not a boolean'],
        ['/api/v1/publish', { ...publish, delay_seconds: '60' }, 'body.delay_seconds', 'must be an integer, not a string'],
        ['/api/v1/publish', { ...publish, eligible_for_retry: 'false' }, 'body.eligible_for_retry', 'must be a boolean, not a string'],
        ['/api/v1/publish', { ...publish, id: 5 }, 'body.id', 'must be a string, not a number'],
        ['/api/v1/retry', { event_id: 'e1', destination_id: ['d1'] }, 'body.destination_id', 'must be a string, not an array'],
        ['/api/v1/retry', { event_id: true, destination_id: 'd1' }, 'body.event_id', 'must be a string, not a boolean'],
        ['/api/v1/tenants/acme/replay', { since: '2026-01-01T00:00:00Z', limit: true }, 'body.limit', 'must be an integer, not a boolean'],
      ] as const) {
        const r = await call('POST', url, body);
        t.equal(r.status, 422, `${url} ${JSON.stringify(body)}`);
        t.same(r.body.problems, [{ path, message }], `${path}: ${message}`);
      }
      t.equal((await call('GET', `${dests}/as-sent`)).status, 404, 'no destination was created');
      // Each event of a batch is named as a single publish's body is.
      const batch = await call('POST', '/api/v1/publish/batch', { events: [{ ...publish, delay_seconds: '60' }] });
      t.same(batch.body.results[0].problems, [{ path: 'body.events[0].delay_seconds', message: 'must be an integer, not a string' }]);
    });

    t.test('a query parameter an operation does not document is 422, also where it documents none', async (t) => {
      const retry = { event_id: 'e1', destination_id: dest.body.id };
      for (const [method, url, body] of [
        ['POST', '/api/v1/retry?x=1', retry],
        ['POST', `/api/v1/tenants/acme/destination/${dest.body.id}/events/e1/retry?x=1`, undefined],
        ['PUT', `/api/v1/tenants/acme/destinations/${dest.body.id}/disable?x=1`, undefined],
        ['DELETE', `/api/v1/tenants/acme/destinations/${dest.body.id}?x=1`, undefined],
        ['GET', '/api/v1/tenants/acme?x=1', undefined],
        ['GET', '/api/v1/topics?x=1', undefined],
        ['GET', '/healthz?x=1', undefined],
      ] as const) {
        const r = await call(method, url, body);
        t.equal(r.status, 422, `${method} ${url}`);
        t.same(r.body.problems, [{ path: 'query.x', message: 'is not a parameter of this route' }], `${method} ${url}: names it`);
      }
      const kept = await call('GET', `/api/v1/tenants/acme/destinations/${dest.body.id}`);
      t.equal(kept.body.disabled_at, null, 'nothing was disabled or deleted');
      // Pages and probes are not operations: the portal's first load carries its token in the query.
      for (const url of ['/portal?token=abc', '/livez?x=1', '/api/v1/openapi.json?x=1'])
        t.not((await app.inject({ method: 'GET', url })).statusCode, 422, url);
    });

    t.test('an operation that takes no body refuses one, beyond {}', async (t) => {
      const url = `/api/v1/tenants/acme/destination/${dest.body.id}/events/nope/retry`;
      for (const body of ['{"destination_id":"other"}', '[]', '"x"', '5', 'null']) {
        const r = await post(app, url, body);
        t.equal(r.statusCode, 422, `retry (first form) with ${body}`);
        t.same(r.json().problems, [{ path: 'body', message: 'must be left out (or {}): this operation takes no body' }]);
      }
      t.equal((await post(app, url, '{}')).json().code, 'EVENT_NOT_FOUND', 'retry (first form) with {}: taken');
      const none = await app.inject({ method: 'POST', url, headers: { authorization: H.authorization } });
      t.equal(none.json().code, 'EVENT_NOT_FOUND', 'retry (first form) with no body: taken');
      is422(t, await post(app, `/api/v1/tenants/acme/destinations/${dest.body.id}/disable`, '{"x":1}', 'PUT'), 'body', 'disable');
      t.equal((await call('GET', `/api/v1/tenants/acme/destinations/${dest.body.id}`)).body.disabled_at, null, 'not disabled');
    });

    t.test('the id alphabet: what clients send passes, the rest is 422', async (t) => {
      for (const id of ['tenant_1', 'acme.eu-west', '0193a000-0000-7000-8000-000000000001', 'org:42@eu', 'a'.repeat(255)])
        t.equal((await call('PUT', `/api/v1/tenants/${encodeURIComponent(id)}`)).status, 201, id.slice(0, 40));
      for (const id of ['..', '.', 'a/b', 'a\r\nb', 'a b', '-a', 'é']) {
        // `.` is a dot segment, removed from the path: `PUT /api/v1/tenants/`, a path without PUT (405).
        const url = `/api/v1/tenants/${encodeURIComponent(id)}`;
        const res = await app.inject({ method: 'PUT', url, headers: { authorization: H.authorization } });
        t.equal(res.statusCode, id === '.' ? 405 : 422, JSON.stringify(id));
      }
      for (const id of ['..', 'a/b', 'a\r\nb']) {
        const d = await call('POST', '/api/v1/tenants/acme/destinations', {
          id,
          type: 'webhook',
          topics: '*',
          config: { url: 'https://example.com/h' },
        });
        t.equal(d.status, 422, `destination id ${JSON.stringify(id)}`);
        const p = await call('POST', '/api/v1/publish', { id, tenant_id: 'acme', topic: 'user.created', data: {} });
        t.equal(p.status, 422, `event id ${JSON.stringify(id)}`);
      }
    });

    t.test('delivery_metadata with CR/LF is refused at create and update', async (t) => {
      const base = { type: 'webhook', topics: '*', config: { url: 'https://example.com/h' } };
      is422(
        t,
        await post(app, '/api/v1/tenants/acme/destinations', JSON.stringify({ ...base, delivery_metadata: { x: 'a\r\nInjected: 1' } })),
        'body.delivery_metadata.x',
        'create',
      );
      is422(
        t,
        await post(app, '/api/v1/tenants/acme/destinations', JSON.stringify({ ...base, delivery_metadata: { 'bad name': 'v' } })),
        'body.delivery_metadata',
        'a name that is no header',
      );
      is422(
        t,
        await post(app, `/api/v1/tenants/acme/destinations/${dest.body.id}`, '{"delivery_metadata":{"x":"a\\nb"}}', 'PATCH'),
        'body.delivery_metadata.x',
        'update',
      );
    });

    t.test('unknown query filters are 422, not ignored', async (t) => {
      for (const q of ['event_id[x][y]=1', 'bogus=1', 'tenant_id[a]=x', 'time[gte][x]=1']) {
        const res = await app.inject({
          method: 'GET',
          url: `/api/v1/tenants/acme/events?${q}`,
          headers: { authorization: H.authorization },
        });
        is422(t, res, 'query.', q);
      }
      const ok = await app.inject({
        method: 'GET',
        url: '/api/v1/tenants/acme/events?destination_id[]=a&destination_id[0]=b&limit=5&time[gte]=2024-01-01',
        headers: { authorization: H.authorization },
      });
      t.equal(ok.statusCode, 200, 'list forms of known parameters still pass');
    });

    t.test('__proto__ and constructor are kept as data; no prototype is polluted', async (t) => {
      const created = await post(
        app,
        '/api/v1/tenants/acme/destinations',
        '{"type":"webhook","topics":"*","config":{"url":"https://example.com/p"},"metadata":{"__proto__":"m"},"filter":{"data":{"constructor":{"prototype":1}}}}',
      );
      t.equal(created.statusCode, 201);
      const id = created.json().id;
      const patched = await post(
        app,
        `/api/v1/tenants/acme/destinations/${id}`,
        '{"metadata":{"__proto__":"n","constructor":"c"},"delivery_metadata":{"__proto__":"d"}}',
        'PATCH',
      );
      t.equal(patched.statusCode, 200);
      const got = await app.inject({
        method: 'GET',
        url: `/api/v1/tenants/acme/destinations/${id}`,
        headers: { authorization: H.authorization },
      });
      const body = JSON.parse(got.body);
      t.same(
        Object.entries(body.metadata),
        [
          ['__proto__', 'n'],
          ['constructor', 'c'],
        ].sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)),
      );
      t.ok(Object.hasOwn(body.filter.data, 'constructor'));
      t.equal(({} as Record<string, unknown>).polluted, undefined);
      t.equal(Object.getPrototypeOf({}), Object.prototype, 'Object.prototype untouched');
      t.equal(typeof ({} as { constructor: unknown }).constructor, 'function');
    });
  });
}

t.test('publish: tenant tokens are refused; __proto__ data is accepted as is', async (t) => {
  const { app, call } = await buildTestApp(t);
  await call('PUT', '/api/v1/tenants/acme');
  const token = (await call('GET', '/api/v1/acme/token')).body.token as string;
  for (const url of ['/api/v1/publish', '/api/v1/publish/batch']) {
    const body = url.endsWith('batch')
      ? { events: [{ tenant_id: 'acme', topic: 'user.created', data: {} }] }
      : { tenant_id: 'acme', topic: 'user.created', data: {} };
    const r = await call('POST', url, body, token);
    t.equal(r.status, 403, `${url} with a tenant token`);
    t.equal(r.body.code, 'FORBIDDEN');
  }
  const res = await post(
    app,
    '/api/v1/publish',
    '{"tenant_id":"acme","topic":"user.created","data":{"__proto__":1,"constructor":{"prototype":1}}}',
  );
  t.equal(res.statusCode, 202, '{"__proto__":1} is valid JSON data');
});

t.test('publish/batch: an event over 1 MiB is 413 in its place, never a 5xx; the others are published', async (t) => {
  const { app, call } = await buildTestApp(t);
  await call('PUT', '/api/v1/tenants/acme');
  const event = (s: string) => ({ tenant_id: 'acme', topic: 'user.created', data: { s } });
  const MiB = 1024 * 1024;
  const payload = JSON.stringify({
    events: [event('a'), event('x'.repeat(MiB)), event('y'.repeat(5 * MiB)), event('b'), event('z'.repeat(MiB - 100))],
  });
  const res = await post(app, '/api/v1/publish/batch', payload);
  t.equal(res.statusCode, 200);
  const results = res.json().results as Array<{ status: number; code?: string; message?: string }>;
  t.same(
    results.map((r) => r.status),
    [202, 413, 413, 202, 202],
    'as a single publish of the same event would be answered',
  );
  t.match(results[1], { code: 'PAYLOAD_TOO_LARGE', message: /^body\.events\[1\] is 1048635 bytes of JSON; an event is at most 1 MiB/ });
  t.match(results[2], { code: 'PAYLOAD_TOO_LARGE', message: /^body\.events\[2\]/ });
});

t.test('tenant tokens must carry exp within the issued lifetime and no future iat', async (t) => {
  const { call, config } = await buildTestApp(t);
  await call('PUT', '/api/v1/tenants/acme');
  const secret = new TextEncoder().encode(config.API_JWT_SECRET);
  const now = Math.floor(Date.now() / 1000);
  const sign = (claims: { iat?: number; exp?: number }) => {
    let j = new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer('switchyard').setSubject('acme');
    if (claims.iat !== undefined) j = j.setIssuedAt(claims.iat);
    if (claims.exp !== undefined) j = j.setExpirationTime(claims.exp);
    return j.sign(secret);
  };
  const get = async (token: string) => (await call('GET', '/api/v1/tenants/acme/destinations', undefined, token)).status;
  t.equal(await get(await sign({ iat: now, exp: now + 3600 })), 200, 'a proper token');
  t.equal(await get(await sign({ iat: now + 30, exp: now + 3600 })), 200, 'iat a little ahead (clock skew)');
  t.equal(await get(await sign({ iat: now })), 401, 'no exp');
  t.equal(await get(await sign({ exp: now + 3600 })), 401, 'no iat');
  t.equal(await get(await sign({ iat: now, exp: now + 10 * 365 * 86400 })), 401, 'a lifetime of ten years');
  t.equal(await get(await sign({ iat: now + 3600, exp: now + 7200 })), 401, 'issued an hour in the future');
});

t.test('bodies that arrive whole with their headers are held whole, and given back', async (t) => {
  // Ten connected sockets each send a complete ~700-byte publish in one write, in one turn: with a
  // budget of 2 KiB the first bodies fill it (each held until Kafka acknowledges its event), and
  // the others are refused 503 and change nothing.
  const { app, call } = await buildTestApp(t, { API_MAX_INFLIGHT_BYTES: '2048' });
  await call('PUT', '/api/v1/tenants/whole');
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const sockets = await Promise.all(
    Array.from({ length: 10 }, () => {
      const s = connect(port, '127.0.0.1');
      t.teardown(() => s.destroy());
      return new Promise<Socket>((resolve) => s.once('connect', () => resolve(s)));
    }),
  );
  const ids = sockets.map((_, i) => `whole-${i}`);
  const answers = sockets.map(
    (s) =>
      new Promise<string>((resolve) => {
        let got = '';
        s.on('data', (d) => {
          got += d.toString();
          if (/\r\n\r\n[\s\S]*\}$/.test(got)) s.end();
        });
        s.on('close', () => resolve(got));
        s.on('error', () => resolve(got));
      }),
  );
  for (const [i, s] of sockets.entries()) {
    const body = JSON.stringify({ id: ids[i], tenant_id: 'whole', topic: 'user.created', data: { pad: 'x'.repeat(600) } });
    s.write(
      `POST /api/v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-admin-key\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
  }
  const texts = await Promise.all(answers);
  const status = texts.map((a) => Number(a.slice(9, 12)));
  t.ok(
    status.every((s) => s === 202 || s === 503),
    `every answer is 202 or 503: ${status.join(' ')}`,
  );
  t.ok(status.filter((s) => s === 202).length >= 1, 'the first bodies are taken');
  t.ok(status.filter((s) => s === 503).length >= 1, 'bodies past the budget are refused');
  for (const [i, text] of texts.entries()) {
    if (status[i] !== 503) continue;
    t.match(text, /retry-after: 1/i, 'a refusal says when to retry');
    t.match(text, /"code":"SERVICE_UNAVAILABLE"/, 'in the documented shape');
  }
  // Every byte was given back with its answer: each body fits again, one after another, and a
  // refused publish left no trace (retried, it is new; an accepted one is a duplicate).
  for (const [i, id] of ids.entries()) {
    const again = await call('POST', '/api/v1/publish', { id, tenant_id: 'whole', topic: 'user.created', data: { pad: 'x'.repeat(600) } });
    t.equal(again.status, 202, `${id} again`);
    t.equal(again.body.duplicate, status[i] === 202, `${id} a duplicate only if accepted before`);
  }
});

t.test('slow bodies hold only the bytes they sent, and time out', async (t) => {
  // A budget of 64 KiB, and 40 clients that announce 1 MiB and send one byte: together they hold
  // 40 bytes, so others still get through; after API_BODY_TIMEOUT_MS each is answered 408.
  const { app, call } = await buildEmbeddedTestApp(t, { API_MAX_INFLIGHT_BYTES: '65536', API_BODY_TIMEOUT_MS: '1500' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const answers: Array<Promise<string>> = [];
  for (let i = 0; i < 40; i++) {
    const s = connect(port, '127.0.0.1');
    t.teardown(() => s.destroy());
    answers.push(
      new Promise((resolve) => {
        let got = '';
        s.on('data', (d) => (got += d.toString()));
        s.on('close', () => resolve(got));
        s.on('error', () => resolve(got));
      }),
    );
    s.write(
      `PUT /api/v1/tenants/slow${i} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-admin-key\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{`,
    );
  }
  await new Promise((r) => setTimeout(r, 200));
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/tenants/fast`, {
    method: 'PUT',
    headers: { authorization: 'Bearer test-admin-key', 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { pad: 'x'.repeat(2000) } }),
  });
  t.equal(res.status, 201, 'a normal request is not refused while slow clients wait');
  const slow = await Promise.all(answers);
  t.equal(slow.filter((a) => a.startsWith('HTTP/1.1 408')).length, 40, 'every slow body answered 408');
  t.match(slow[0], /"code":"REQUEST_TIMEOUT"/, 'in the documented shape');
  t.equal((await call('GET', '/api/v1/tenants/slow0')).status, 404, 'nothing was created');
});
