// The body budget over a real connection (body-budget.ts): a body sent with its headers is counted
// at once, whole, and reaches the parser as the request's own stream; one still arriving goes
// through the counting stream under the timer, and is answered 408 when it does not come.
import { connect } from 'node:net';
import Fastify from 'fastify';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { registerBodyBudget } from '../src/body-budget.ts';
import { registerErrorHandling } from '../src/errors.ts';

async function server(t: Test, bodyTimeoutMs = 10_000) {
  const app = Fastify();
  // As the gateway's authentication does: preParsing runs once this hook's promise settles.
  app.addHook('onRequest', async () => undefined);
  registerBodyBudget(app, { maxInFlightBytes: 1 << 20, bodyTimeoutMs, bodyLimit: 1 << 20 });
  // After the budget's hook: what the parser is handed.
  const own: boolean[] = [];
  app.addHook('preParsing', async (req, _reply, payload) => {
    own.push(payload === req.raw);
    return payload;
  });
  registerErrorHandling(app);
  app.post('/echo', async (req) => ({ bytes: JSON.stringify(req.body).length }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  return { port: (app.server.address() as { port: number }).port, own };
}

t.test('a body sent with its headers is counted whole: the parser reads the request itself', async (t) => {
  const { port, own } = await server(t);
  const body = JSON.stringify({ pad: 'x'.repeat(1000) });
  for (let i = 0; i < 20; i++) {
    const r = await request(`http://127.0.0.1:${port}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    t.equal(r.statusCode, 200);
    t.same(await r.body.json(), { bytes: body.length });
  }
  t.same(own, Array(20).fill(true), 'every body took the whole-body path');
});

t.test('a body still arriving is counted as it comes, and answered 408 when it stops', async (t) => {
  const { port, own } = await server(t, 300);
  const answer = await new Promise<string>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write('POST /echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"pad":"');
    });
    let got = '';
    s.on('data', (d) => {
      got += d.toString();
    });
    s.on('close', () => resolve(got));
    s.on('error', reject);
  });
  t.same(own, [false], 'the counting stream, not the request');
  t.match(answer, /^HTTP\/1\.1 408/);
  t.match(answer, /"code":"REQUEST_TIMEOUT"/);
});
