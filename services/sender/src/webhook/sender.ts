import { request, type Dispatcher } from 'undici';
import type { Sender } from '../sender.ts';
import { classifyNetworkError } from './egress.ts';
import { buildWebhookRequest, type SignatureMode } from './request.ts';

export interface WebhookSenderOptions {
  dispatcher: Dispatcher;
  mode: SignatureMode;
  headerPrefix: string;
  responseMaxBytes: number;
  now?: () => Date;
}

/** Reads at most `max` bytes of a body and discards the rest, so a huge response cannot exhaust memory. */
async function readCapped(body: AsyncIterable<Buffer>, max: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of body) {
    if (size < max) chunks.push(chunk.subarray(0, max - size));
    size += chunk.length;
    if (size > max) truncated = true;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated };
}

function parseRetryAfter(v: string | string[] | undefined, now: Date): number | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  if (!s) return undefined;
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const at = Date.parse(s);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

export function createWebhookSender(opts: WebhookSenderOptions): Sender {
  const now = opts.now ?? (() => new Date());
  return {
    async deliver({ event, destination, credentials, deliveryMetadata, signal }) {
      const url = String(destination.config.url);
      const at = now();
      const { headers, body } = buildWebhookRequest({
        mode: opts.mode,
        headerPrefix: opts.headerPrefix,
        event,
        deliveryMetadata,
        customHeaders: (destination.config.custom_headers as Record<string, string> | undefined) ?? null,
        secret: (credentials.secret as string | undefined) ?? null,
        previousSecret: (credentials.previous_secret as string | undefined) ?? null,
        previousSecretInvalidAt: (credentials.previous_secret_invalid_at as string | undefined) ?? null,
        now: at,
      });
      try {
        // Redirects are not followed: a 3xx is recorded as the destination's answer (and is below 400, so a success).
        const res = await request(url, {
          method: 'POST',
          headers,
          body,
          signal,
          dispatcher: opts.dispatcher,
          maxRedirections: 0,
        } as Parameters<typeof request>[1]);
        const { text, truncated } = await readCapped(res.body, opts.responseMaxBytes);
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : '';
        } catch {
          // keep the text as it came
        }
        const ok = res.statusCode < 400;
        const retryAfterMs = parseRetryAfter(res.headers['retry-after'], at);
        return {
          status: ok ? 'success' : 'failed',
          code: String(res.statusCode),
          response_data: { status: res.statusCode, body: parsed, ...(truncated ? { truncated: true } : {}) },
          retryable: !ok,
          ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        };
      } catch (err) {
        const { reason, message } = classifyNetworkError(err);
        return { status: 'failed', code: 'ERR', response_data: { reason, message }, retryable: reason !== 'egress_blocked' };
      }
    },
    async close() {},
  };
}
