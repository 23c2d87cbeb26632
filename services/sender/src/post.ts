import type { Dispatcher } from 'undici';

export interface PostOptions {
  /** POST unless told (s3 PUTs its objects). */
  method?: 'POST' | 'PUT';
  headers: Record<string, string>;
  body: string | Buffer;
  signal: AbortSignal;
  /** Bytes of the answer kept; up to DISCARD_MAX_BYTES more are read and dropped, so the connection stays reusable. */
  maxBytes: number;
  /** An answer header to keep (lower case), besides Retry-After. */
  keepHeader?: string;
}

export interface PostResponse {
  statusCode: number;
  /** The first Retry-After header, if any. */
  retryAfter: string | undefined;
  /** The value of `keepHeader`, if asked for and answered. */
  kept?: string | undefined;
  text: string;
  truncated: boolean;
}

/**
 * Bytes of an answer read past `maxBytes` before the connection is closed instead: reading on keeps
 * the connection reusable, but an answer without end would hold the delivery until its deadline.
 */
export const DISCARD_MAX_BYTES = 1024 * 1024;

/**
 * One POST (or PUT) through undici's `dispatch`, the answer's first `maxBytes` kept as text. Redirects are
 * not followed. Rejects with the signal's reason once it fires, also while the request still waits
 * for a free connection (undici starts a request, and only then aborts it, once a connection is free).
 *
 * Not undici's `request`: that wraps every answer in a Readable stream and an async resource, which
 * a webhook answer (a status and a short body) does not need; a loopback loop measured 27 against
 * 43 µs of CPU per request (docs/performance.md, "Webhook requests through `dispatch`").
 */
export function post(dispatcher: Dispatcher, url: string, opts: PostOptions): Promise<PostResponse> {
  return new Promise((resolve, reject) => {
    const { signal, maxBytes } = opts;
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    let controller: Dispatcher.DispatchController | null = null;
    let settled = false;
    let statusCode = 0;
    let retryAfter: string | undefined;
    let kept: string | undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    const onAbort = () => {
      controller?.abort(signal.reason as Error);
      settle(signal.reason as Error);
    };
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve({ statusCode, retryAfter, kept, text: Buffer.concat(chunks).toString('utf8'), truncated: size > maxBytes });
    };
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        // Aborted while queued: the request ends here, before anything is written.
        if (settled) c.abort(signal.reason as Error);
        else controller = c;
      },
      onResponseStart(_c, status, headers) {
        if (status < 200) return; // 1xx: the final answer follows
        statusCode = status;
        const v = headers['retry-after'];
        retryAfter = Array.isArray(v) ? v[0] : v;
        if (opts.keepHeader) {
          const k = headers[opts.keepHeader];
          kept = Array.isArray(k) ? k[0] : k;
        }
      },
      onResponseData(c, chunk) {
        if (size < maxBytes) chunks.push(chunk.subarray(0, maxBytes - size));
        size += chunk.length;
        if (size > maxBytes + DISCARD_MAX_BYTES && !settled) {
          settle(null); // the answer so far, truncated
          c.abort(new Error('answer too long: connection closed'));
        }
      },
      onResponseEnd() {
        settle(null);
      },
      onResponseError(_c, err) {
        settle(err);
      },
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const u = new URL(url);
      dispatcher.dispatch(
        { origin: u.origin, path: `${u.pathname}${u.search}`, method: opts.method ?? 'POST', headers: opts.headers, body: opts.body },
        handler,
      );
    } catch (err) {
      settle(err as Error);
    }
  });
}
