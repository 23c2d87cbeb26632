import { createServer } from 'node:net';
import t from 'tap';
import { createCipher } from '@switchyard/shared/crypto.ts';
import { createDb } from '@switchyard/shared/db/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import { freePort, listenLocal, testConfig } from '@switchyard/shared/testing/index.ts';
import { build } from '../src/app.ts';
import { buildTestApp } from './helpers.ts';

t.test('healthz answers 503 naming the failed check when Postgres does not answer', async (t) => {
  // A database on a port where nothing listens: the real client's real failure.
  const url = `postgres://switchyard@127.0.0.1:${await freePort()}/none`;
  const config = testConfig({ DATABASE_URL: url });
  const db = createDb({ url, poolMax: 1 });
  const refuse = async () => {
    throw new Error('no Kafka here');
  };
  const producer = { send: refuse, sendMany: refuse, close: async () => {} };
  const app = await build(config, {
    db,
    producer,
    logger: createLogger('gateway-test', 'silent'),
    cipher: createCipher(config.AES_ENCRYPTION_SECRET),
  });
  t.teardown(async () => {
    await app.close();
    await db.destroy();
  });
  const r = await app.inject({ method: 'GET', url: '/api/v1/healthz' });
  t.equal(r.statusCode, 503);
  t.match(r.json(), { status: 'failed', checks: { postgres: 'failed' }, workers: { postgres: { status: 'failed' } } });
});

t.test('healthz answers 503 within its bound when Postgres hangs (takes connections, never answers)', async (t) => {
  // A stopped database (SIGSTOP, a dead network path) accepts and stays silent: the client would
  // wait for its own timeout (30 s), a probe must not.
  const { port } = await listenLocal(t, createServer());
  const url = `postgres://switchyard@127.0.0.1:${port}/none`;
  const config = testConfig({ DATABASE_URL: url });
  const db = createDb({ url, poolMax: 1 });
  const refuse = async () => {
    throw new Error('no Kafka here');
  };
  const app = await build(config, {
    db,
    producer: { send: refuse, sendMany: refuse, close: async () => {} },
    logger: createLogger('gateway-test', 'silent'),
    cipher: createCipher(config.AES_ENCRYPTION_SECRET),
  });
  t.teardown(async () => {
    await app.close();
    await db.destroy().catch(() => {});
  });
  const started = Date.now();
  const r = await app.inject({ method: 'GET', url: '/healthz' });
  const took = Date.now() - started;
  t.equal(r.statusCode, 503);
  t.match(r.json(), { status: 'failed', checks: { postgres: 'failed' } });
  // READY_TIMEOUT_MS is 2 s; the bound only tells it from the client's own 30 s.
  t.ok(took < 20_000, `answered in ${took} ms, not after the client's own timeout`);
});

t.test('gateway basics', async (t) => {
  const { app, call } = await buildTestApp(t);

  t.test('healthz answers without credentials', async (t) => {
    const r = await call('GET', '/healthz', undefined, null);
    t.equal(r.status, 200);
    t.equal(r.body.status, 'healthy');
    // The other service's answer shape as well, which its SDKs check: a timestamp and {name: {status}}.
    t.same(r.body.workers, { postgres: { status: 'healthy' } });
    t.ok(Math.abs(Date.parse(r.body.timestamp) - Date.now()) < 60_000, 'timestamp is now');
  });

  t.test('missing or wrong credentials are 401 in the error shape', async (t) => {
    const none = await call('PUT', '/api/v1/tenants/t1', undefined, null);
    t.equal(none.status, 401);
    t.same(none.body, { status: 401, code: 'UNAUTHORIZED', message: 'Missing or invalid credentials.' });
    t.equal((await call('PUT', '/api/v1/tenants/t1', undefined, 'wrong')).status, 401);
  });

  t.test('tenant PUT is idempotent: 201 then 200, in both path forms', async (t) => {
    const first = await call('PUT', '/api/v1/tenants/t1');
    t.equal(first.status, 201);
    t.match(first.body, { id: 't1', destinations_count: 0, topics: [] });
    const again = await call('PUT', '/api/v1/t1');
    t.equal(again.status, 200);
    t.equal(again.body.created_at, first.body.created_at);
  });

  t.test('tenant ids that collide with fixed paths are refused', async (t) => {
    const r = await call('PUT', '/api/v1/tenants/publish');
    t.equal(r.status, 422);
    t.equal(r.body.code, 'TENANT_ID_RESERVED');
  });

  t.test('malformed JSON is 400 and changes nothing', async (t) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/tenants/t1/destinations',
      headers: { authorization: 'Bearer test-admin-key', 'content-type': 'application/json' },
      payload: '{"type": "webhook",',
    });
    t.equal(res.statusCode, 400);
    t.equal(res.json().code, 'INVALID_JSON');
    t.same((await call('GET', '/api/v1/tenants/t1/destinations')).body, []);
  });

  t.test('destination validation lists every problem with its path', async (t) => {
    const r = await call('POST', '/api/v1/tenants/t1/destinations', {
      type: 'webhook',
      topics: '*',
      config: { url: 'ftp://nope' },
      credentials: { bogus: 1 },
    });
    t.equal(r.status, 422);
    t.equal(r.body.code, 'VALIDATION_FAILED');
    const paths = r.body.problems.map((p: { path: string }) => p.path).sort();
    t.same(paths, ['body.config.url', 'body.credentials.bogus']);
  });

  t.test('unknown routes are 404 in the error shape', async (t) => {
    const r = await call('GET', '/nope');
    t.equal(r.status, 404);
    t.equal(r.body.code, 'NOT_FOUND');
  });

  t.test('publish to an unknown tenant is 404; a non-object data is 422', async (t) => {
    t.equal((await call('POST', '/api/v1/publish', { tenant_id: 'ghost', topic: 'a', data: {} })).status, 404);
    const bad = await call('POST', '/api/v1/publish', { tenant_id: 't1', topic: 'a', data: [1, 2] });
    t.equal(bad.status, 422);
    t.match(bad.body.problems, [{ path: 'body.data' }]);
  });
});

t.test('oversized and non-JSON bodies get a clear 4xx and change nothing', async (t) => {
  const { app, call } = await buildTestApp(t);
  await call('PUT', '/api/v1/tenants/big');
  const huge = await app.inject({
    method: 'POST',
    url: '/api/v1/tenants/big/destinations',
    headers: { authorization: 'Bearer test-admin-key', 'content-type': 'application/json' },
    payload: JSON.stringify({
      type: 'webhook',
      topics: '*',
      config: { url: 'https://example.com' },
      metadata: { pad: 'x'.repeat(2 * 1024 * 1024) },
    }),
  });
  t.equal(huge.statusCode, 413);
  t.equal(huge.json().code, 'PAYLOAD_TOO_LARGE');
  const text = await app.inject({
    method: 'POST',
    url: '/api/v1/tenants/big/destinations',
    headers: { authorization: 'Bearer test-admin-key', 'content-type': 'text/plain' },
    payload: 'type=webhook',
  });
  t.equal(text.statusCode, 415);
  t.equal(text.json().code, 'UNSUPPORTED_MEDIA_TYPE');
  t.same((await call('GET', '/api/v1/tenants/big/destinations')).body, [], 'nothing was created');
});

t.test('unexpected errors become a generic 500 without internal text', async (t) => {
  const { app, db } = await buildTestApp(t);
  await db.destroy(); // the database goes away under the gateway
  const res = await app.inject({ method: 'GET', url: '/api/v1/tenants/x', headers: { authorization: 'Bearer test-admin-key' } });
  t.equal(res.statusCode, 500);
  t.same(res.json(), { status: 500, code: 'INTERNAL', message: 'Internal server error.' });
  t.notMatch(res.body, /knex|pool|destroy|postgres/i, 'no internal error text leaks');
});

t.test('request bytes past API_MAX_INFLIGHT_BYTES get 503 with Retry-After and change nothing', async (t) => {
  const { app, call } = await buildTestApp(t, { API_MAX_INFLIGHT_BYTES: '2048' });
  await call('PUT', '/api/v1/tenants/busy');
  const publish = (id: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/publish',
      headers: { authorization: 'Bearer test-admin-key' },
      payload: { id, tenant_id: 'busy', topic: 'user.created', data: { pad: 'x'.repeat(600) } },
    });
  // Ten bodies of ~700 bytes at once: the first two fit the budget, and they are in flight (each
  // waits for Kafka's acknowledgement) when the others arrive.
  const ids = Array.from({ length: 10 }, (_, i) => `burst-${i}`);
  const answers = await Promise.all(ids.map(publish));
  const accepted = ids.filter((_, i) => answers[i]?.statusCode === 202);
  const refused = answers.filter((a) => a.statusCode === 503);
  t.ok(accepted.length >= 1, `${accepted.length} accepted`);
  t.ok(refused.length >= 1, `${refused.length} refused`);
  t.equal(accepted.length + refused.length, 10, 'every answer is 202 or 503');
  for (const r of refused) {
    t.same(r.json(), {
      status: 503,
      code: 'SERVICE_UNAVAILABLE',
      message: 'The gateway holds as many request bytes as it may; nothing was accepted. Retry shortly.',
    });
    t.equal(r.headers['retry-after'], '1');
  }
  // The budget is given back as answers go out, and a refused publish left no trace: retried, every
  // event is accepted as new, and every accepted one is a duplicate.
  for (const [i, id] of ids.entries()) {
    const again = await publish(id);
    t.equal(again.statusCode, 202, `${id} retried`);
    t.equal(again.json().duplicate, answers[i]?.statusCode === 202, `${id} duplicate only if accepted before`);
  }
  // Requests without a body are never refused for bytes.
  t.equal((await call('GET', '/api/v1/tenants/busy')).status, 200);
});

t.test('repeats racing their original learn its outcome: one new, the others duplicates, no 409', async (t) => {
  const { app, call } = await buildTestApp(t);
  await call('PUT', '/api/v1/tenants/racing');
  const publish = (id = 'order-7') =>
    app.inject({
      method: 'POST',
      url: '/api/v1/publish',
      headers: { authorization: 'Bearer test-admin-key' },
      payload: { id, tenant_id: 'racing', topic: 'user.created', data: { n: 7 } },
    });
  // The producer's first write connects and reads metadata, which a busy host can stretch past the
  // repeats' 1.6 s of waiting: made first, so the race below is the repeats' against a plain write.
  t.equal((await publish('order-6')).statusCode, 202);
  const answers = await Promise.all(Array.from({ length: 5 }, () => publish()));
  t.same(
    answers.map((a) => a.statusCode),
    [202, 202, 202, 202, 202],
    'every repeat waits for the original instead of 409',
  );
  t.same(answers.map((a) => a.json().duplicate).sort(), [false, true, true, true, true], 'one published, four duplicates');
  // At once after the 202, before the accepted mark is sure to have landed.
  const again = await publish();
  t.same([again.statusCode, again.json().duplicate], [202, true], 'a repeat right after the 202 is a duplicate');
});

t.test("a scheduled event's repeat is a duplicate without a due time: this request's is not the event's", async (t) => {
  const { call } = await buildTestApp(t);
  await call('PUT', '/api/v1/tenants/later');
  const body = { id: 'reminder-1', tenant_id: 'later', topic: 'user.created', data: {}, delay_seconds: 600 };
  const first = await call('POST', '/api/v1/publish', body);
  t.same([first.status, first.body.duplicate, typeof first.body.deliver_at], [202, false, 'string'], 'the first: its due time');
  const again = await call('POST', '/api/v1/publish', { ...body, delay_seconds: 900 });
  t.same([again.status, again.body.duplicate], [202, true]);
  t.notOk('deliver_at' in again.body, 'the repeat names no due time');
  const batch = await call('POST', '/api/v1/publish/batch', { events: [{ ...body, delay_seconds: 60 }] });
  t.same(batch.body.results, [{ status: 202, id: 'reminder-1', duplicate: true, destination_ids: [] }], 'nor in a batch');
});
