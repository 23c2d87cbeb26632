import { createHmac, randomBytes } from 'node:crypto';
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import {
  buildWebhookRequest,
  generateWebhookSecret,
  RESERVED_HEADERS,
  signCompatible,
  signStandard,
  validateCustomHeaders,
  webhookSecretKey,
  type WebhookRequestInput,
} from '../src/webhook/request.ts';

const HOUR = 60 * 60 * 1000;

function input(over: Partial<WebhookRequestInput> = {}): WebhookRequestInput {
  return {
    mode: 'standard',
    headerPrefix: 'x-outpost-',
    event: {
      id: 'evt_123',
      topic: 'user.created',
      time: '2024-05-01T12:00:00.000Z',
      metadata: null,
      data: { hello: 'world' },
    },
    deliveryMetadata: null,
    customHeaders: null,
    secret: null,
    previousSecret: null,
    previousSecretInvalidAt: null,
    now: new Date(),
    ...over,
  };
}

/** Independent compatible-mode check: HMAC-SHA256 over the body, keyed as the documented rule says. */
function hexMac(key: Buffer | string, body: string): string {
  return createHmac('sha256', key).update(Buffer.from(body, 'utf8')).digest('hex');
}

const whsecKey = (secret: string): Buffer => Buffer.from(secret.slice('whsec_'.length), 'base64');

t.test('generated secrets are whsec_ + base64 of 32 random bytes', async (t) => {
  const s = generateWebhookSecret();
  t.match(s, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.equal(whsecKey(s).length, 32);
  t.not(generateWebhookSecret(), s);
});

t.test('signing keys: whsec_ decodes its base64, anything else is UTF-8', async (t) => {
  const bytes = randomBytes(24);
  t.same(webhookSecretKey(`whsec_${bytes.toString('base64')}`), bytes);
  t.same(webhookSecretKey('plain-secret-é'), Buffer.from('plain-secret-é', 'utf8'));
  t.same(webhookSecretKey('whsec_'), Buffer.from('whsec_', 'utf8'), 'empty remainder: the whole string');
  t.same(webhookSecretKey('whsec_not base64!'), Buffer.from('whsec_not base64!', 'utf8'), 'invalid base64: the whole string');
});

t.test('body is the event data exactly as published, content-type and user-agent set', async (t) => {
  const data = { name: 'Zoë 日本語 🚀', nested: { list: [1, 2.5, null, true, { deep: 'x\ny' }], empty: {} }, quote: '"\\' };
  const { body, headers } = buildWebhookRequest(input({ event: { ...input().event, data } }));
  t.equal(body, JSON.stringify(data));
  t.same(JSON.parse(body), data);
  t.equal(headers['content-type'], 'application/json');
  t.equal(headers['user-agent'], 'Switchyard/0.1');
  t.equal(buildWebhookRequest(input({ event: { ...input().event, data: [1, 'two'] } })).body, '[1,"two"]');
});

t.test('metadata headers: system < delivery_metadata < event metadata', async (t) => {
  const { headers } = buildWebhookRequest(
    input({
      deliveryMetadata: { source: 'delivery', team: 'blue', topic: 'overridden-by-delivery' },
      event: {
        ...input().event,
        metadata: { Source: 'event', count: 3, flag: false, nothing: null, obj: { a: 1 } },
      },
    }),
  );
  t.equal(headers['x-outpost-event-id'], 'evt_123');
  t.equal(headers['x-outpost-timestamp'], String(Date.parse('2024-05-01T12:00:00.000Z') / 1000));
  t.equal(headers['x-outpost-topic'], 'overridden-by-delivery', 'delivery_metadata beats system keys');
  t.equal(headers['x-outpost-source'], 'event', 'event metadata beats delivery_metadata (names compared lower-cased)');
  t.equal(headers['x-outpost-team'], 'blue');
  t.equal(headers['x-outpost-count'], '3');
  t.equal(headers['x-outpost-flag'], 'false');
  t.equal(headers['x-outpost-obj'], '{"a":1}');
  t.notOk('x-outpost-nothing' in headers, 'null values are not sent');
  for (const name of Object.keys(headers)) t.equal(name, name.toLowerCase(), `${name} is lower-case`);

  const overSystem = buildWebhookRequest(input({ event: { ...input().event, metadata: { 'event-id': 'mine' } } })).headers;
  t.equal(overSystem['x-outpost-event-id'], 'mine', 'event metadata beats system keys');
});

t.test('header prefix is configurable', async (t) => {
  const { headers } = buildWebhookRequest(
    input({ mode: 'compatible', headerPrefix: 'X-Acme-', secret: 'k', deliveryMetadata: { env: 'prod' } }),
  );
  t.equal(headers['x-acme-event-id'], 'evt_123');
  t.equal(headers['x-acme-topic'], 'user.created');
  t.equal(headers['x-acme-env'], 'prod');
  t.ok(headers['x-acme-signature'], 'compatible signature uses the prefix');
  t.notOk(Object.keys(headers).some((h) => h.startsWith('x-outpost-')));
});

t.test('custom headers are sent with lower-cased names', async (t) => {
  const { headers } = buildWebhookRequest(input({ customHeaders: { Authorization: 'Bearer abc', 'X-Tenant': 't1' } }));
  t.equal(headers.authorization, 'Bearer abc');
  t.equal(headers['x-tenant'], 't1');
});

t.test('header injection is refused', async (t) => {
  const { headers, dropped } = buildWebhookRequest(
    input({
      mode: 'compatible',
      secret: 'k',
      deliveryMetadata: { ok: 'fine', 'bad key': 'x', 'crlf\r\nx-evil': 'x', injected: 'a\r\nx-evil: 1', signature: 'forged' },
      event: { ...input().event, metadata: { lf: 'a\nb', nul: 'a\u0000b', utf: 'café', ok2: 'tab\tok' } },
      customHeaders: {
        'X-Good': 'yes',
        'X-Bad': 'a\r\nx-evil: 1',
        'Content-Type': 'text/plain',
        'x-outpost-topic': 'spoof',
        'bad name': 'v',
      },
    }),
  );
  t.equal(headers['x-outpost-ok'], 'fine');
  t.equal(headers['x-outpost-ok2'], 'tab\tok');
  t.equal(headers['x-good'], 'yes');
  for (const [name, value] of Object.entries(headers)) {
    t.match(name, /^[!#$%&'*+\-.^_`|~0-9a-z]+$/, `${name} is a token`);
    t.notMatch(value, /[\r\n\0]/, `${name} has no line break`);
  }
  t.notOk('x-evil' in headers);
  for (const gone of ['x-outpost-bad key', 'x-outpost-injected', 'x-outpost-lf', 'x-outpost-nul', 'x-outpost-utf', 'x-bad', 'bad name']) {
    t.notOk(gone in headers, `${gone} not sent`);
    t.ok(dropped.includes(gone), `${gone} reported as dropped`);
  }
  t.equal(headers['content-type'], 'application/json', 'custom headers cannot replace content-type');
  t.equal(headers['x-outpost-topic'], 'user.created', 'custom headers cannot spoof metadata headers');
  t.equal(headers['x-outpost-signature'], signCompatible('k', JSON.stringify(input().event.data)), 'metadata cannot forge the signature');

  const emptyPrefix = buildWebhookRequest(
    input({
      headerPrefix: '',
      secret: generateWebhookSecret(),
      event: { ...input().event, metadata: { 'content-type': 'x', 'webhook-id': 'y' } },
    }),
  ).headers;
  t.equal(emptyPrefix['content-type'], 'application/json', 'without a prefix, metadata still cannot set protocol headers');
  t.equal(emptyPrefix['webhook-id'], 'evt_123');
});

t.test('standard mode: verified by the standardwebhooks package', async (t) => {
  const secret = generateWebhookSecret();
  const now = new Date();
  const { headers, body } = buildWebhookRequest(
    input({ secret, now, event: { ...input().event, data: { msg: 'héllo ✓', n: [1, { x: null }] } } }),
  );
  t.equal(headers['webhook-id'], 'evt_123');
  t.equal(headers['webhook-timestamp'], String(Math.floor(now.getTime() / 1000)));
  t.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
  t.notOk('x-outpost-signature' in headers);
  t.same(new Webhook(secret).verify(body, headers), { msg: 'héllo ✓', n: [1, { x: null }] });
  t.throws(() => new Webhook(generateWebhookSecret()).verify(body, headers), 'another secret fails');
  t.throws(() => new Webhook(secret).verify(`${body} `, headers), 'another body fails');

  // webhook-id stays the event id on a retry; the timestamp follows the attempt.
  const later = buildWebhookRequest(input({ secret, now: new Date(now.getTime() + 60_000) }));
  t.equal(later.headers['webhook-id'], 'evt_123');
  t.equal(later.headers['webhook-timestamp'], String(Math.floor(now.getTime() / 1000) + 60));
  t.ok(new Webhook(secret).verify(later.body, later.headers));

  // The helper matches the library's own signing.
  const ts = 1_700_000_000;
  t.equal(signStandard(secret, 'msg_1', ts, '{"a":1}'), new Webhook(secret).sign('msg_1', new Date(ts * 1000), '{"a":1}'));
});

t.test('standard mode with a non-whsec secret signs with its UTF-8 bytes', async (t) => {
  const secret = 'legacy-sécret';
  const { headers, body } = buildWebhookRequest(input({ secret }));
  t.ok(new Webhook(new Uint8Array(Buffer.from(secret, 'utf8')), { format: 'raw' }).verify(body, headers));
});

t.test('standard mode during rotation: both secrets verify alone, current first', async (t) => {
  const oldSecret = generateWebhookSecret();
  const newSecret = generateWebhookSecret();
  const now = new Date();
  const rotating = { secret: newSecret, previousSecret: oldSecret, now };
  for (const previousSecretInvalidAt of [new Date(now.getTime() + 24 * HOUR).toISOString(), null]) {
    const { headers, body } = buildWebhookRequest(input({ ...rotating, previousSecretInvalidAt }));
    const sigs = headers['webhook-signature']?.split(' ') ?? [];
    t.equal(sigs.length, 2, `two signatures (invalid_at ${previousSecretInvalidAt})`);
    const ts = Number(headers['webhook-timestamp']);
    t.equal(sigs[0], signStandard(newSecret, 'evt_123', ts, body), 'current secret first');
    t.equal(sigs[1], signStandard(oldSecret, 'evt_123', ts, body));
    t.ok(new Webhook(oldSecret).verify(body, headers), 'old secret alone verifies');
    t.ok(new Webhook(newSecret).verify(body, headers), 'new secret alone verifies');
  }
});

t.test('an expired previous secret no longer signs', async (t) => {
  const oldSecret = generateWebhookSecret();
  const newSecret = generateWebhookSecret();
  const now = new Date();
  for (const previousSecretInvalidAt of [new Date(now.getTime() - 1000).toISOString(), now.toISOString(), 'not a date']) {
    const { headers, body } = buildWebhookRequest(input({ secret: newSecret, previousSecret: oldSecret, previousSecretInvalidAt, now }));
    t.equal(headers['webhook-signature']?.split(' ').length, 1, `one signature (invalid_at ${previousSecretInvalidAt})`);
    t.ok(new Webhook(newSecret).verify(body, headers));
    t.throws(() => new Webhook(oldSecret).verify(body, headers));
    const compat = buildWebhookRequest(
      input({ mode: 'compatible', secret: newSecret, previousSecret: oldSecret, previousSecretInvalidAt, now }),
    );
    t.equal(compat.headers['x-outpost-signature'], `v0=${hexMac(whsecKey(newSecret), compat.body)}`);
  }
});

t.test('compatible mode: v0=<hex HMAC-SHA256 of body>, comma-separated during rotation', async (t) => {
  const data = { amount: 12.5, who: 'Ünïcode', tags: ['a', 'b'] };
  const event = { ...input().event, data };

  const raw = buildWebhookRequest(input({ mode: 'compatible', secret: 'plain-secret', event }));
  t.equal(raw.headers['x-outpost-signature'], `v0=${hexMac('plain-secret', JSON.stringify(data))}`, 'plain secret: UTF-8 key');
  for (const h of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) t.notOk(h in raw.headers, `no ${h}`);

  const current = generateWebhookSecret();
  const previous = 'old-plain-secret';
  const now = new Date('2024-05-01T12:00:00Z');
  const rotating = buildWebhookRequest(
    input({ mode: 'compatible', secret: current, previousSecret: previous, previousSecretInvalidAt: '2024-05-02T12:00:00Z', now, event }),
  );
  const sig = rotating.headers['x-outpost-signature'];
  t.equal(sig, `v0=${hexMac(whsecKey(current), rotating.body)},v0=${hexMac(previous, rotating.body)}`, 'current first, whsec key decoded');
  t.equal(signCompatible(current, rotating.body), `v0=${hexMac(whsecKey(current), rotating.body)}`);
});

t.test('no secret: no signature headers', async (t) => {
  for (const mode of ['standard', 'compatible'] as const) {
    for (const secret of [null, '']) {
      const { headers } = buildWebhookRequest(input({ mode, secret, previousSecret: 'old' }));
      for (const h of ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'x-outpost-signature'])
        t.notOk(h in headers, `${mode}: no ${h}`);
    }
  }
});

t.test('custom header validation', async (t) => {
  t.same(validateCustomHeaders(undefined), []);
  t.same(validateCustomHeaders(null), []);
  t.same(validateCustomHeaders({ Authorization: 'Bearer x', 'X-Api-Key': 'k', 'X-Empty': '' }), []);
  t.same(validateCustomHeaders(['a']), [
    { path: 'body.config.custom_headers', message: 'must be an object of header names to string values' },
  ]);
  t.same(validateCustomHeaders('x'), [
    { path: 'body.config.custom_headers', message: 'must be an object of header names to string values' },
  ]);

  for (const name of RESERVED_HEADERS) {
    const problems = validateCustomHeaders({ [name.toUpperCase()]: 'v' });
    t.equal(problems.length, 1, `${name} refused`);
    t.match(problems[0]?.message, /reserved/);
  }
  for (const name of [
    'content-type',
    'content-length',
    'host',
    'connection',
    'transfer-encoding',
    'user-agent',
    'webhook-id',
    'webhook-timestamp',
    'webhook-signature',
  ]) {
    t.ok(RESERVED_HEADERS.has(name), `${name} is reserved`);
  }

  const problems = validateCustomHeaders(
    {
      'X-Outpost-Topic': 'spoof',
      'bad name': 'v',
      'x-crlf': 'a\r\nb',
      'x-utf': 'ünï',
      'x-num': 5,
      'X-Dup': 'a',
      'x-dup': 'b',
      [`x-${'a'.repeat(300)}`]: 'v',
      'x-long': 'v'.repeat(9000),
    },
    'x-outpost-',
    'body.config.custom_headers',
  );
  const byPath = Object.fromEntries(problems.map((p) => [p.path.replace('body.config.custom_headers.', ''), p.message]));
  t.match(byPath['X-Outpost-Topic'], /reserved for metadata headers/);
  t.match(byPath['bad name'], /not a valid HTTP header name/);
  t.match(byPath['x-crlf'], /printable ASCII/);
  t.match(byPath['x-utf'], /printable ASCII/);
  t.match(byPath['x-num'], /must be a string/);
  t.match(byPath['x-dup'], /duplicates/);
  t.match(byPath[`x-${'a'.repeat(300)}`], /exceeds 256/);
  t.match(byPath['x-long'], /exceeds 8192/);
  t.equal(problems.length, 8);

  t.match(validateCustomHeaders({ 'X-Acme-Foo': 'v' }, 'x-acme-')[0]?.message, /x-acme-/, 'the configured prefix is reserved');
  t.same(validateCustomHeaders({ 'X-Outpost-Foo': 'v' }, 'x-acme-'), [], 'another prefix is free');
});
