/**
 * Verifies a webhook delivery from Switchyard (docs/webhooks.md), in either signature mode:
 * - standard (Standard Webhooks v1): `webhook-signature: v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`,
 *   space-separated while two secrets sign; `webhook-timestamp` must be within the tolerance;
 * - compatible: `x-outpost-signature: v0=<hex HMAC-SHA256(key, body)>`, comma-separated while two sign.
 * The key of a `whsec_<base64>` secret is its decoded bytes, of any other secret its UTF-8 bytes.
 * Secret rotation: pass every secret you hold (the new one and the previous one); a delivery signed
 * by either passes. Comparisons take constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type SignatureMode = 'standard' | 'compatible';

export interface VerifyWebhookOptions {
  /** The raw body as received: not parsed and re-serialised. */
  body: string | Uint8Array;
  /** The request headers (names in any case). */
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The destination's secret, or every secret held during a rotation. */
  secrets: string | readonly string[];
  /** The deployment's WEBHOOK_SIGNATURE_MODE; 'standard' by default. */
  mode?: SignatureMode;
  /** Compatible mode: the deployment's WEBHOOK_HEADER_PREFIX; 'x-outpost-' by default. */
  headerPrefix?: string;
  /** Standard mode: how far webhook-timestamp may be from now; 300 s by default. */
  toleranceSeconds?: number;
  now?: Date;
}

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;

function keyOf(secret: string): Buffer {
  if (secret.startsWith(SECRET_PREFIX)) {
    const rest = secret.slice(SECRET_PREFIX.length);
    if (rest.length > 0 && BASE64.test(rest)) {
      const key = Buffer.from(rest, 'base64');
      if (key.length > 0) return key;
    }
  }
  return Buffer.from(secret, 'utf8');
}

function header(headers: VerifyWebhookOptions['headers'], name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>))
    if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(',') : v;
  return undefined;
}

const sameText = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * Throws WebhookVerificationError unless a secret given signed this delivery. Returns the event id
 * (standard mode: webhook-id, for deduplication; compatible mode: the event-id metadata header).
 */
export function verifyWebhook(o: VerifyWebhookOptions): { eventId: string | undefined } {
  const secrets = [o.secrets].flat().filter(Boolean);
  if (!secrets.length) throw new WebhookVerificationError('no secret to verify with');
  const body = typeof o.body === 'string' ? Buffer.from(o.body, 'utf8') : Buffer.from(o.body);
  const prefix = (o.headerPrefix ?? 'x-outpost-').toLowerCase();
  if ((o.mode ?? 'standard') === 'compatible') {
    const given = header(o.headers, `${prefix}signature`);
    if (!given) throw new WebhookVerificationError(`missing ${prefix}signature header`);
    const signatures = given.split(',').map((s) => s.trim());
    const signed = secrets.some((secret) => {
      const expected = `v0=${createHmac('sha256', keyOf(secret)).update(body).digest('hex')}`;
      return signatures.some((s) => sameText(s, expected));
    });
    if (!signed) throw new WebhookVerificationError('no signature matches');
    return { eventId: header(o.headers, `${prefix}event-id`) };
  }
  const id = header(o.headers, 'webhook-id');
  const timestamp = header(o.headers, 'webhook-timestamp');
  const given = header(o.headers, 'webhook-signature');
  if (!id || !timestamp || !given) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
  const seconds = Number(timestamp);
  const now = Math.floor((o.now ?? new Date()).getTime() / 1000);
  if (!/^\d+$/.test(timestamp) || Math.abs(now - seconds) > (o.toleranceSeconds ?? 300))
    throw new WebhookVerificationError('webhook-timestamp is outside the tolerance');
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), body]);
  const signatures = given
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => s.slice(3));
  const ok = secrets.some((secret) => {
    const expected = createHmac('sha256', keyOf(secret)).update(signed).digest('base64');
    return signatures.some((s) => sameText(s, expected));
  });
  if (!ok) throw new WebhookVerificationError('no signature matches');
  return { eventId: id };
}
