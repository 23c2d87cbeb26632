/**
 * The HTTP request of one webhook delivery: body, metadata headers, custom headers and signatures.
 * Pure code (no I/O), so it can be tested against an independent Standard Webhooks verifier.
 *
 * Signing keys: a secret of the form `whsec_<base64>` signs with the decoded bytes (as Standard Webhooks
 * libraries do); any other string signs with its UTF-8 bytes (secrets migrated from elsewhere). The same rule
 * holds in both signature modes, so one secret always means one key.
 */
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

export { generateWebhookSecret } from '@switchyard/shared/destinations/types/webhook.ts';
import { isHeaderName, isHeaderValue, isPrefixed, RESERVED_HEADERS } from '@switchyard/shared/destinations/webhook-headers.ts';
export { RESERVED_HEADERS, validateCustomHeaders } from '@switchyard/shared/destinations/webhook-headers.ts';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;

export type SignatureMode = 'standard' | 'compatible';

export const USER_AGENT = 'Switchyard/0.1';
export const SECRET_PREFIX = 'whsec_';

/**
 * The HMAC key of a secret: the base64-decoded remainder of `whsec_<base64>`, otherwise the UTF-8 bytes of the
 * whole string (also when the part after `whsec_` is not valid, non-empty base64).
 */
export function webhookSecretKey(secret: string): Buffer {
  if (secret.startsWith(SECRET_PREFIX)) {
    const rest = secret.slice(SECRET_PREFIX.length);
    if (rest.length > 0 && BASE64.test(rest)) {
      const key = Buffer.from(rest, 'base64');
      if (key.length > 0) return key;
    }
  }
  return Buffer.from(secret, 'utf8');
}

// HMAC keys as KeyObjects, made once per secret: a raw Buffer key is converted on every HMAC, which
// costs several times the HMAC itself. Bounded; the oldest entry goes first.
const KEY_CACHE_MAX = 10_000;
const keyObjects = new Map<string, KeyObject>();
function hmacKey(secret: string): KeyObject {
  let k = keyObjects.get(secret);
  if (!k) {
    k = createSecretKey(webhookSecretKey(secret));
    if (keyObjects.size >= KEY_CACHE_MAX) keyObjects.delete(keyObjects.keys().next().value as string);
    keyObjects.set(secret, k);
  }
  return k;
}

/** One Standard Webhooks v1 signature: `v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`. */
export function signStandard(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', hmacKey(secret)).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/** One compatible-mode signature: `v0=<hex HMAC-SHA256(key, body)>`. */
export function signCompatible(secret: string, body: string): string {
  return `v0=${createHmac('sha256', hmacKey(secret)).update(body, 'utf8').digest('hex')}`;
}

export interface WebhookEvent {
  id: string;
  topic: string;
  /** ISO 8601. */
  time: string;
  metadata: Record<string, unknown> | null;
  data: unknown;
}

export interface WebhookRequestInput {
  mode: SignatureMode;
  /** Prefix of the metadata headers, usually DEFAULT_HEADER_PREFIX. */
  headerPrefix: string;
  event: WebhookEvent;
  deliveryMetadata: Record<string, string> | null;
  customHeaders: Record<string, string> | null;
  secret: string | null;
  previousSecret: string | null;
  /** ISO 8601; null means the previous secret signs until it is removed. */
  previousSecretInvalidAt: string | null;
  now: Date;
}

export interface WebhookRequest {
  headers: Record<string, string>;
  /** The bytes that were signed, as a string: send it as is. */
  body: string;
  /** Header names (metadata or custom) left out because the name or the value could not be sent safely. */
  dropped: string[];
}

const unixSeconds = (ms: number): number => Math.floor(ms / 1000);

/** A metadata value as header text; undefined when it has none (null). */
function metadataText(v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v);
}

/** The secrets that sign now, current first; the previous one only until previous_secret_invalid_at. */
export function signingSecrets(
  secret: string | null,
  previousSecret: string | null,
  previousSecretInvalidAt: string | null,
  now: Date,
): string[] {
  if (!secret) return [];
  const out = [secret];
  if (previousSecret && previousSecret !== secret) {
    // An unreadable expiry counts as expired: an old secret must never sign longer than intended.
    const stillValid = previousSecretInvalidAt === null || Date.parse(previousSecretInvalidAt) > now.getTime();
    if (stillValid) out.push(previousSecret);
  }
  return out;
}

export function buildWebhookRequest(input: WebhookRequestInput): WebhookRequest {
  const { event, now } = input;
  const prefix = input.headerPrefix.toLowerCase();
  const body = JSON.stringify(event.data) ?? 'null';
  const signatureHeader = `${prefix}signature`;
  const dropped: string[] = [];
  const headers: Record<string, string> = {};

  // Metadata: system keys, then delivery_metadata, then the event's metadata; later wins (on the lower-cased name).
  const eventTime = Date.parse(event.time);
  const system: Record<string, unknown> = { 'event-id': event.id, topic: event.topic };
  if (!Number.isNaN(eventTime)) system.timestamp = unixSeconds(eventTime);
  for (const source of [system, input.deliveryMetadata, event.metadata]) {
    if (!source) continue;
    for (const [key, raw] of Object.entries(source)) {
      const text = metadataText(raw);
      if (text === undefined) continue;
      const name = `${prefix}${key}`.toLowerCase();
      // The signature header and the protocol headers are ours, whatever the prefix.
      if (key === '' || !isHeaderName(name) || !isHeaderValue(text) || name === signatureHeader || RESERVED_HEADERS.has(name)) {
        dropped.push(name);
        continue;
      }
      headers[name] = text;
    }
  }

  // Custom headers were validated with the destination; check again so a stored value can never inject a header.
  for (const [key, value] of Object.entries(input.customHeaders ?? {})) {
    const name = key.toLowerCase();
    if (
      typeof value !== 'string' ||
      !isHeaderName(name) ||
      !isHeaderValue(value) ||
      RESERVED_HEADERS.has(name) ||
      isPrefixed(name, prefix)
    ) {
      dropped.push(name);
      continue;
    }
    headers[name] = value;
  }

  headers['content-type'] = 'application/json';
  headers['user-agent'] = USER_AGENT;

  const secrets = signingSecrets(input.secret, input.previousSecret, input.previousSecretInvalidAt, now);
  if (secrets.length > 0) {
    if (input.mode === 'standard') {
      const timestamp = unixSeconds(now.getTime());
      headers['webhook-id'] = event.id;
      headers['webhook-timestamp'] = String(timestamp);
      headers['webhook-signature'] = secrets.map((s) => signStandard(s, event.id, timestamp, body)).join(' ');
    } else {
      headers[signatureHeader] = secrets.map((s) => signCompatible(s, body)).join(',');
    }
  }
  return { headers, body, dropped };
}
