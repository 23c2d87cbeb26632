// EVENT_GATEWAY_VERIFY_URL: a gateway destination's token is checked with the event gateway on
// create and when it changes; unset, it is not (the other destination tests run without it).
import t from 'tap';
import { startReceiver } from '@switchyard/shared/testing/index.ts';
import { buildEmbeddedTestApp } from './helpers.ts';

const token = (source: string, key: string) => Buffer.from(`${source}:${key}`).toString('base64');

t.test('tokens are verified with the event gateway when a verify URL is set', async (t) => {
  const gw = await startReceiver(t);
  gw.respond((req) => ({ status: req.headers.authorization === `Bearer ${token('src_ok', 'key')}` ? 200 : 401 }));
  const { call } = await buildEmbeddedTestApp(t, { EVENT_GATEWAY_VERIFY_URL: `${gw.url}/sources/{source_id}/verify` });
  await call('PUT', '/api/v1/tenants/acme');
  const create = (tok: string) =>
    call('POST', '/api/v1/tenants/acme/destinations', { type: 'gateway', topics: '*', credentials: { token: tok } });

  const ok = await create(token('src_ok', 'key'));
  t.equal(ok.status, 201, 'a token the gateway accepts is saved');
  t.equal(gw.requests.at(-1)?.url, '/sources/src_ok/verify', 'the source id goes into the URL');

  const refused = await create(token('src_ok', 'wrong'));
  t.equal(refused.status, 422);
  t.match(refused.body, { problems: [{ path: 'body.credentials.token', message: /refused by the event gateway/ }] });

  const patch = await call('PATCH', `/api/v1/tenants/acme/destinations/${ok.body.id}`, {
    credentials: { token: token('src_ok', 'wrong') },
  });
  t.equal(patch.status, 422, 'a changed token is verified too');
  const seen = gw.requests.length;
  const topics = await call('PATCH', `/api/v1/tenants/acme/destinations/${ok.body.id}`, { topics: ['*'] });
  t.equal(topics.status, 200);
  t.equal(gw.requests.length, seen, 'an unchanged token is not verified again');

  gw.respond(() => ({ status: 500 }));
  const down = await create(token('src_ok', 'key'));
  t.equal(down.status, 503, 'a gateway that cannot verify is not a problem of the request');
  const list = await call('GET', '/api/v1/tenants/acme/destinations');
  t.equal(list.body.length, 1, 'nothing was saved');
});

t.test('without a verify URL tokens are not checked', async (t) => {
  const { call } = await buildEmbeddedTestApp(t);
  await call('PUT', '/api/v1/tenants/acme');
  const res = await call('POST', '/api/v1/tenants/acme/destinations', {
    type: 'gateway',
    topics: '*',
    credentials: { token: token('s', 'k') },
  });
  t.equal(res.status, 201);
});
