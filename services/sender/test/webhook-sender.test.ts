// The webhook sender against local receivers: real HTTP through the egress-checked undici agent.
import { createHmac } from 'node:crypto';
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import type { DeliveryInput } from '../src/sender.ts';
import { createEgressAgent, parseAllowList } from '../src/egress.ts';
import { createClientCache } from '../src/clients.ts';
import { createWebhookSender, responseBody, type WebhookSenderOptions } from '../src/webhook/sender.ts';
import { freePort, startReceiver } from '@switchyard/shared/testing/index.ts';

/** A webhook sender as the delivery handler sees it: through the per-destination client cache. */
const webhookSender = (opts: WebhookSenderOptions) => createClientCache(createWebhookSender(opts));

const agent = createEgressAgent({ allow: parseAllowList(['127.0.0.0/8']), connectTimeoutMs: 1000 });
t.teardown(() => agent.close());

const event = {
  id: 'evt_1',
  tenant_id: 'acme',
  topic: 'user.created',
  time: '2026-11-22T10:00:00.000Z',
  eligible_for_retry: true,
  metadata: { source: 'crm', topic: 'overridden-by-metadata' },
  data: { name: 'Zoë', nested: { list: [1, 2.5, 'x'], unicode: '☃' } },
};

function input(url: string, credentials: Record<string, unknown>, extra: Partial<DeliveryInput> = {}): DeliveryInput {
  return {
    event,
    destination: {
      id: 'd1',
      tenant_id: 'acme',
      type: 'webhook',
      config: { url, custom_headers: { authorization: 'Bearer abc' } },
      credentials: null,
      delivery_metadata: null,
    },
    credentials,
    deliveryMetadata: { env: 'prod', source: 'overridden-by-event' },
    signal: AbortSignal.timeout(2000),
    ...extra,
  };
}

const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
const previous = `whsec_${Buffer.from('fedcba9876543210fedcba9876543210').toString('base64')}`;

t.test('standard mode: headers, body bytes, signature verified by the standardwebhooks package', async (t) => {
  const rx = await startReceiver(t);
  rx.respond(() => ({ status: 201, body: '{"received":true}' }));
  const sender = webhookSender({ dispatcher: agent, mode: 'standard', headerPrefix: 'x-outpost-', responseMaxBytes: 1024 });
  const out = await sender.deliver(input(`${rx.url}/hook`, { secret }));
  t.match(out, { status: 'success', code: '201', response_data: { status: 201, body: { received: true } } });
  const req = rx.requests[0];
  if (!req) throw new Error('no request');
  t.equal(req.body, JSON.stringify(event.data), 'the body is the event data, byte for byte');
  t.equal(req.headers['content-type'], 'application/json');
  t.equal(req.headers['x-outpost-event-id'], 'evt_1');
  t.equal(req.headers['x-outpost-topic'], 'overridden-by-metadata', 'event metadata wins over system keys');
  t.equal(req.headers['x-outpost-source'], 'crm', 'event metadata wins over delivery_metadata');
  t.equal(req.headers['x-outpost-env'], 'prod', 'delivery_metadata is sent');
  t.equal(req.headers.authorization, 'Bearer abc', 'custom headers are sent as given');
  const headers = {
    'webhook-id': String(req.headers['webhook-id']),
    'webhook-timestamp': String(req.headers['webhook-timestamp']),
    'webhook-signature': String(req.headers['webhook-signature']),
  };
  t.equal(headers['webhook-id'], 'evt_1', 'webhook-id is the event id (stable across retries)');
  t.ok(new Webhook(secret).verify(req.body, headers), 'verifies with the independent implementation');
});

t.test('double signing while the previous secret is valid, single after it expires', async (t) => {
  const rx = await startReceiver(t);
  const sender = webhookSender({ dispatcher: agent, mode: 'standard', headerPrefix: 'x-outpost-', responseMaxBytes: 1024 });
  await sender.deliver(
    input(rx.url, { secret, previous_secret: previous, previous_secret_invalid_at: new Date(Date.now() + 3600_000).toISOString() }),
  );
  await sender.deliver(
    input(rx.url, { secret, previous_secret: previous, previous_secret_invalid_at: new Date(Date.now() - 1000).toISOString() }),
  );
  const [during, after] = rx.requests;
  if (!during || !after) throw new Error('missing requests');
  const h = (r: typeof during) => ({
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });
  t.equal(String(during.headers['webhook-signature']).split(' ').length, 2, 'two signatures, space separated');
  t.ok(new Webhook(secret).verify(during.body, h(during)), 'a receiver with the new secret verifies');
  t.ok(new Webhook(previous).verify(during.body, h(during)), 'a receiver still on the old secret verifies');
  t.equal(String(after.headers['webhook-signature']).split(' ').length, 1, 'the expired secret no longer signs');
  t.throws(() => new Webhook(previous).verify(after.body, h(after)), 'the old secret no longer verifies');
});

t.test('compatible mode: x-outpost-signature v0=<hex HMAC of the body>, comma separated during rotation', async (t) => {
  const rx = await startReceiver(t);
  const sender = webhookSender({ dispatcher: agent, mode: 'compatible', headerPrefix: 'x-outpost-', responseMaxBytes: 1024 });
  const raw = 'plain-secret-for-compat';
  await sender.deliver(
    input(rx.url, {
      secret: raw,
      previous_secret: 'old-plain-secret',
      previous_secret_invalid_at: new Date(Date.now() + 60_000).toISOString(),
    }),
  );
  const req = rx.requests[0];
  if (!req) throw new Error('no request');
  const expect = (key: string) => `v0=${createHmac('sha256', key).update(req.body).digest('hex')}`;
  t.equal(req.headers['x-outpost-signature'], `${expect(raw)},${expect('old-plain-secret')}`);
  t.notOk(req.headers['webhook-signature'], 'no Standard Webhooks headers in this mode');
});

t.test('responses: failures keep status and body; bodies are capped; Retry-After is read', async (t) => {
  const rx = await startReceiver(t);
  rx.respond(() => ({ status: 429, body: 'x'.repeat(5000), headers: { 'retry-after': '120' } }));
  const sender = webhookSender({ dispatcher: agent, mode: 'standard', headerPrefix: 'x-outpost-', responseMaxBytes: 100 });
  const out = await sender.deliver(input(rx.url, { secret }));
  t.match(out, { status: 'failed', code: '429', retryable: true, retryAfterMs: 120_000 });
  t.equal(String(out.response_data?.body).length, 100, 'capped at the configured size');
  t.equal(out.response_data?.truncated, true);
  rx.respond(() => ({ status: 302, headers: { location: 'http://10.0.0.1/' } }));
  const redirect = await sender.deliver(input(rx.url, { secret }));
  t.match(redirect, { status: 'success', code: '302' }, 'redirects are not followed; a 3xx is the answer');
});

t.test('a response body is recorded parsed when it is JSON, else as the text it was', async (t) => {
  // What the sender recorded before it skipped text that cannot be JSON: parse, or keep the text.
  const reference = (text: string): unknown => {
    try {
      return text ? JSON.parse(text) : '';
    } catch {
      return text;
    }
  };
  const fixed = [
    ...['', ' ', '\n', 'ok', 'OK', 'Accepted', 'nul', 'tru', 'fals', '{', '[', '-', '"', '"open', '1.', '01', '.5', '+1', 'NaN', 'ok {}'],
    ...['\ufeff{}', '\u00a0{}', '\v[]', '\f1', '<html></html>', '{"a":1} trailing', '[1,]'],
    ...['{}', '[]', '""', '"ok"', '0', '-1', '1.5e3', 'true', 'false', 'null', ' \t\r\n{"a":[1,{"b":null}]} \n', '[1,"x",false]'],
  ];
  const alphabet = [
    ' ',
    '\t',
    '\n',
    '\r',
    '\u00a0',
    '{',
    '}',
    '[',
    ']',
    '"',
    ':',
    ',',
    '-',
    '0',
    '1',
    'e',
    '.',
    't',
    'r',
    'u',
    'f',
    'a',
    'l',
    's',
    'n',
    'o',
    'k',
    'x',
  ];
  const random = Array.from({ length: 20_000 }, () =>
    Array.from({ length: Math.floor(Math.random() * 8) }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join(''),
  );
  const differ = [...fixed, ...random].filter(
    (text) =>
      JSON.stringify(responseBody(text)) !== JSON.stringify(reference(text)) || typeof responseBody(text) !== typeof reference(text),
  );
  t.same(differ, [], 'the same as parsing every body, for every input');
  t.ok(
    random.some((text) => typeof reference(text) !== 'string' && text.trim() !== ''),
    'the random inputs include JSON',
  );

  const rx = await startReceiver(t);
  const sender = webhookSender({ dispatcher: agent, mode: 'standard', headerPrefix: 'x-outpost-', responseMaxBytes: 1024 });
  for (const [body, recorded] of [
    ['ok', 'ok'],
    [' [1, 2] ', [1, 2]],
    ['"ok"', 'ok'],
    ['{"broken"', '{"broken"'],
  ] as const) {
    rx.respond(() => ({ status: 200, body }));
    const out = await sender.deliver(input(rx.url, { secret }));
    t.same(out.response_data, { status: 200, body: recorded }, `answered ${JSON.stringify(body)}`);
  }
});

t.test('network failures are failed attempts with a reason', async (t) => {
  const sender = webhookSender({ dispatcher: agent, mode: 'standard', headerPrefix: 'x-outpost-', responseMaxBytes: 100 });
  const port = await freePort();
  t.match(await sender.deliver(input(`http://127.0.0.1:${port}/`, { secret })), {
    status: 'failed',
    code: 'ERR',
    retryable: true,
    response_data: { reason: 'connection_refused' },
  });

  const rx = await startReceiver(t);
  rx.respond(() => ({ status: 200, delayMs: 3000 }));
  t.match(await sender.deliver(input(rx.url, { secret }, { signal: AbortSignal.timeout(300) })), {
    status: 'failed',
    code: 'ERR',
    response_data: { reason: 'timeout' },
  });

  const blocked = webhookSender({
    dispatcher: createEgressAgent({ allow: parseAllowList([]) }),
    mode: 'standard',
    headerPrefix: 'x-outpost-',
    responseMaxBytes: 100,
  });
  for (const url of [
    'http://127.0.0.1/',
    'http://10.1.2.3/',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/',
    'http://[fd00::1]/',
    'http://localhost/',
  ]) {
    const out = await blocked.deliver(input(url, { secret }, { signal: AbortSignal.timeout(1000) }));
    t.match(
      out,
      { status: 'failed', code: 'ERR', retryable: false, response_data: { reason: 'egress_blocked' } },
      `${url} is refused and not retried`,
    );
  }
});
