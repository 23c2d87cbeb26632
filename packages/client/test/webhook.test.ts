// verifyWebhook against the sender's own signing code (services/sender/src/webhook/request.ts), in
// both signature modes and through a secret rotation.
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { generateWebhookSecret } from '@switchyard/shared/destinations/types/webhook.ts';
import { buildWebhookRequest, type SignatureMode } from '@switchyard/sender/src/webhook/request.ts';
import { verifyWebhook, WebhookVerificationError } from '../src/index.ts';

const now = new Date();
const event = { id: 'evt_1', topic: 'user.created', time: now.toISOString(), metadata: { source: 'test' }, data: { name: 'Ada', n: 1 } };
const signed = (mode: SignatureMode, secret: string, previousSecret: string | null = null) =>
  buildWebhookRequest({
    mode,
    headerPrefix: 'x-outpost-',
    event,
    deliveryMetadata: null,
    customHeaders: null,
    secret,
    previousSecret,
    previousSecretInvalidAt: previousSecret ? new Date(now.getTime() + 3_600_000).toISOString() : null,
    now,
  });
const refused = (fn: () => unknown) => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof WebhookVerificationError ? err.message : `unexpected ${err}`;
  }
};

for (const mode of ['standard', 'compatible'] as const) {
  t.test(`${mode} mode`, async (t) => {
    const secret = generateWebhookSecret();
    const req = signed(mode, secret);
    t.same(verifyWebhook({ mode, secrets: secret, headers: req.headers, body: req.body }), { eventId: 'evt_1' }, 'a delivery verifies');
    t.same(verifyWebhook({ mode, secrets: [secret], headers: new Headers(req.headers), body: Buffer.from(req.body) }), {
      eventId: 'evt_1',
    });
    t.match(
      refused(() => verifyWebhook({ mode, secrets: generateWebhookSecret(), headers: req.headers, body: req.body })),
      /no signature matches/,
    );
    t.match(
      refused(() => verifyWebhook({ mode, secrets: secret, headers: req.headers, body: `${req.body} ` })),
      /no signature matches/,
      'a changed body fails',
    );
    t.match(
      refused(() => verifyWebhook({ mode, secrets: secret, headers: {}, body: req.body })),
      /missing/,
    );
    // A secret that is not whsec_ (migrated from elsewhere) signs with its UTF-8 bytes.
    const plain = signed(mode, 'a-plain-shared-secret');
    t.ok(verifyWebhook({ mode, secrets: 'a-plain-shared-secret', headers: plain.headers, body: plain.body }));

    // Rotation: both secrets sign; a receiver holding either (or both) verifies.
    const next = generateWebhookSecret();
    const rotated = signed(mode, next, secret);
    for (const held of [[secret], [next], [next, secret]])
      t.ok(verifyWebhook({ mode, secrets: held, headers: rotated.headers, body: rotated.body }), `holding ${held.length} secret(s)`);
    t.ok(refused(() => verifyWebhook({ mode, secrets: generateWebhookSecret(), headers: rotated.headers, body: rotated.body })));
  });
}

t.test('standard mode: the timestamp must be recent, and Standard Webhooks agrees', async (t) => {
  const secret = generateWebhookSecret();
  const req = signed('standard', secret);
  const later = new Date(now.getTime() + 10 * 60_000);
  t.match(
    refused(() => verifyWebhook({ secrets: secret, headers: req.headers, body: req.body, now: later })),
    /tolerance/,
  );
  t.ok(verifyWebhook({ secrets: secret, headers: req.headers, body: req.body, now: later, toleranceSeconds: 3600 }));
  t.same(new Webhook(secret).verify(req.body, req.headers), event.data, 'the reference library verifies the same request');
});
