import type { Dispatcher } from 'undici';
import { type FailureReason, failed, type Outcome, type TypeSender } from '../sender.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { type PostOptions, type PostResponse, post } from '../post.ts';
import { buildWebhookRequest, type SignatureMode } from './request.ts';

export interface WebhookSenderOptions {
  dispatcher: Dispatcher;
  mode: SignatureMode;
  headerPrefix: string;
  responseMaxBytes: number;
  now?: () => Date;
}

/** The failure reason of an HTTP answer of 400 or above (every HTTP failure is retried all the same). */
export function httpFailureReason(status: number): FailureReason {
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404 || status === 410) return 'not_found';
  if (status === 429) return 'throttled';
  return status >= 500 ? 'peer_error' : 'rejected';
}

export function parseRetryAfter(s: string | undefined, now: Date): number | undefined {
  if (!s) return undefined;
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const at = Date.parse(s);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

// A JSON text's first character after JSON's whitespace (space, tab, LF, CR): an object, an array,
// a string, a number, true, false or null. Any other start cannot parse.
const JSON_START = /^[ \t\n\r]*[{["\-0-9tfn]/;

/**
 * The destination's answer as recorded: parsed when it is JSON, else the text as it came ('' for
 * none). Many receivers answer "ok" or "Accepted"; a failed JSON.parse builds a SyntaxError with a
 * stack trace, about 6% of the sender's busy time in a profile where every answer was "ok"
 * (docs/performance.md, "Response bodies parsed only when they can be JSON"), so text that cannot be JSON is not tried.
 */
export function responseBody(text: string): unknown {
  if (!text || !JSON_START.test(text)) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * An HTTP answer as an attempt (webhook and gateway destinations): success below 400, the status as
 * the code, the body as recorded; a failure is retried, after Retry-After when the peer sent one.
 */
export function httpOutcome(res: PostResponse, at: Date): Outcome {
  const ok = res.statusCode < 400;
  const retryAfterMs = parseRetryAfter(res.retryAfter, at);
  return {
    status: ok ? 'success' : 'failed',
    code: String(res.statusCode),
    response_data: {
      ...(ok ? {} : { reason: httpFailureReason(res.statusCode), message: `HTTP ${res.statusCode}` }),
      status: res.statusCode,
      body: responseBody(res.text),
      ...(res.truncated ? { truncated: true } : {}),
    },
    retryable: !ok,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/**
 * POSTs `request` to `url` and reads the answer, or the network's failure, as an attempt: never throws.
 * Redirects are not followed: a 3xx is recorded as the destination's answer (below 400, a success).
 */
export async function postOutcome(dispatcher: Dispatcher, url: string, request: PostOptions, at: Date): Promise<Outcome> {
  try {
    return httpOutcome(await post(dispatcher, url, request), at);
  } catch (err) {
    const { reason, message } = classifyNetworkError(err);
    return failed(reason, message);
  }
}

/**
 * Webhook delivery: a signed POST of the event data to `config.url` through the shared egress-checked
 * agent (`dispatcher`, closed by its owner). A client binds one destination's URL, headers and secrets;
 * it holds no connection of its own (the agent pools them per origin).
 */
export function createWebhookSender(opts: WebhookSenderOptions): TypeSender {
  const now = opts.now ?? (() => new Date());
  return {
    open({ config, credentials }) {
      const url = String(config.url);
      const customHeaders = (config.custom_headers as Record<string, string> | undefined) ?? null;
      const secret = (credentials.secret as string | undefined) ?? null;
      const previousSecret = (credentials.previous_secret as string | undefined) ?? null;
      const previousSecretInvalidAt = (credentials.previous_secret_invalid_at as string | undefined) ?? null;
      return {
        async deliver({ event, deliveryMetadata, signal }) {
          const at = now();
          const { headers, body } = buildWebhookRequest({
            mode: opts.mode,
            headerPrefix: opts.headerPrefix,
            event,
            deliveryMetadata,
            customHeaders,
            secret,
            previousSecret,
            previousSecretInvalidAt,
            now: at,
          });
          return postOutcome(opts.dispatcher, url, { headers, body, signal, maxBytes: opts.responseMaxBytes }, at);
        },
        async close() {},
      };
    },
    async close() {},
  };
}
