/**
 * The AWS front of an emulator that does not check credentials (ElasticMQ, kinesalite, s3rver): an
 * HTTP proxy on loopback that verifies every request's Signature Version 4 against its own table of
 * access keys, written from the specification (not the SDK's signer), and answers as AWS does when
 * it does not verify: the service's own error shape, in its protocol (AWS JSON, or S3's XML). It can
 * also throttle, answering as the service does when throttled, with a Retry-After. Verified requests
 * go to the emulator unchanged (or with the key id rewritten, `upstreamKeyId`, for s3rver, which
 * knows one key and never checks a v4 signature).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Teardown } from '../index.ts';

export type AwsProtocol = 'json' | 's3';

export interface AwsGate {
  /** http://127.0.0.1:<port>: the `endpoint` destinations use. */
  url: string;
  port: number;
  /** Accepted access keys: key id -> secret. Change at will (rotation). */
  keys: Map<string, string>;
  /** Answers the next `n` requests signed by `keyId` with the service's throttling error. */
  throttle(keyId: string, n?: number, retryAfterSeconds?: number): void;
  /** Requests seen (verified or not), for tests that count. */
  readonly seen: number;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

// RFC 3986 unreserved characters stay; everything else is %XX (what SigV4 calls UriEncode).
const uriEncode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function canonicalQuery(search: string): string {
  if (!search || search === '?') return '';
  return search
    .slice(1)
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const [k = '', v = ''] = pair.split('=');
      return [uriEncode(decodeURIComponent(k.replace(/\+/g, ' '))), uriEncode(decodeURIComponent(v.replace(/\+/g, ' ')))] as const;
    })
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

/**
 * The canonical URI: S3 signs the path as sent (encoded once); the other services encode each
 * segment of it once more.
 */
function canonicalPath(path: string, service: string): string {
  if (service === 's3') return path || '/';
  return (
    path
      .split('/')
      .map((seg) => uriEncode(decodeURIComponent(seg)))
      .join('/') || '/'
  );
}

interface Verdict {
  ok: boolean;
  keyId?: string;
  code?: string;
  message?: string;
}

/** Verifies the Authorization header of one request (header signing only; no presigned URLs). */
export function verifySigV4(req: IncomingMessage, body: Buffer, keys: ReadonlyMap<string, string>): Verdict {
  const auth = String(req.headers.authorization ?? '');
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (!m) return { ok: false, code: 'MissingAuthenticationToken', message: 'Request is missing a valid Authentication Token' };
  const [, keyId = '', date = '', region = '', service = '', signedHeaders = '', signature = ''] = m;
  const secret = keys.get(keyId);
  if (secret === undefined)
    return { ok: false, keyId, code: 'InvalidAccessKeyId', message: 'The security token included in the request is invalid.' };
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const url = new URL(req.url ?? '/', 'http://gate');
  const headerLines = signedHeaders
    .split(';')
    .map(
      (h) =>
        `${h}:${String(req.headers[h] ?? '')
          .trim()
          .replace(/\s+/g, ' ')}\n`,
    )
    .join('');
  const payloadHash = typeof req.headers['x-amz-content-sha256'] === 'string' ? req.headers['x-amz-content-sha256'] : sha256(body);
  const canonical = [
    req.method,
    canonicalPath(url.pathname, service),
    canonicalQuery(url.search),
    headerLines,
    signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
  const expected = hmac(key, toSign);
  const given = Buffer.from(signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return {
      ok: false,
      keyId,
      code: 'SignatureDoesNotMatch',
      message: 'The request signature we calculated does not match the signature you provided.',
    };
  }
  return { ok: true, keyId };
}

function answerError(
  res: ServerResponse,
  protocol: AwsProtocol,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
) {
  if (protocol === 's3') {
    res.writeHead(status, { 'content-type': 'application/xml', ...headers });
    res.end(
      `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>gate</RequestId></Error>`,
    );
    return;
  }
  // AWS JSON 1.0/1.1: the error type in `__type` and the x-amzn-query-error header (SQS's query-compatible codes).
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'gate', ...headers });
  res.end(JSON.stringify({ __type: code, message }));
}

export interface AwsGateOptions {
  upstream: { host: string; port: number };
  protocol: AwsProtocol;
  /** The error code the service answers when throttling. */
  throttleCode: string;
  /** HTTP status of that answer (400 for the JSON services, 503 for S3's SlowDown). */
  throttleStatus?: number;
  /** Key id the verified request carries on to the emulator instead of the caller's. */
  upstreamKeyId?: string;
}

export async function startAwsGate(t: Teardown, opts: AwsGateOptions): Promise<AwsGate> {
  const keys = new Map<string, string>();
  const throttled = new Map<string, { n: number; retryAfter: number }>();
  let seen = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen++;
      const body = Buffer.concat(chunks);
      const v = verifySigV4(req, body, keys);
      if (!v.ok) {
        const status = opts.protocol === 's3' ? 403 : 400;
        return answerError(res, opts.protocol, status, v.code ?? 'AccessDenied', v.message ?? 'denied');
      }
      const th = v.keyId ? throttled.get(v.keyId) : undefined;
      if (th && th.n > 0) {
        th.n--;
        return answerError(res, opts.protocol, opts.throttleStatus ?? 400, opts.throttleCode, 'Rate exceeded', {
          'retry-after': String(th.retryAfter),
        });
      }
      const headers = { ...req.headers };
      if (opts.upstreamKeyId && v.keyId) {
        headers.authorization = String(headers.authorization).replace(`Credential=${v.keyId}/`, `Credential=${opts.upstreamKeyId}/`);
      }
      const up = httpRequest(
        { host: opts.upstream.host, port: opts.upstream.port, method: req.method, path: req.url, headers },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
        },
      );
      up.on('error', (err) => {
        if (!res.headersSent) answerError(res, opts.protocol, 500, 'InternalFailure', err.message);
        else res.destroy();
      });
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    keys,
    throttle(keyId, n = 1, retryAfterSeconds = 3) {
      throttled.set(keyId, { n, retryAfter: retryAfterSeconds });
    },
    get seen() {
      return seen;
    },
  };
}
