/**
 * The AWS front of an emulator that does not check credentials (ElasticMQ, kinesalite, the S3 peer): an
 * HTTP proxy on loopback that verifies every request's Signature Version 4 against its own table of
 * access keys, written from the specification (not the SDK's signer), and answers as AWS does when
 * it does not verify: the service's own error shape, in its protocol (AWS JSON, or S3's XML). It can
 * also throttle, answering as the service does when throttled, with a Retry-After; fail chosen entries
 * of a batch (SQS SendMessageBatch, Kinesis PutRecords) as the service reports a failed entry, the
 * others going through; and hang up on a request as a peer going down would. Verified requests
 * go to the emulator unchanged.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenLocal, type Teardown } from '../index.ts';

export type AwsProtocol = 'json' | 's3';

export interface AwsGate {
  /** http://127.0.0.1:<port>: the `endpoint` destinations use. */
  url: string;
  port: number;
  /** Accepted access keys: key id -> secret. Change at will (rotation). */
  keys: Map<string, string>;
  /** Answers the next `n` requests signed by `keyId` with the service's throttling error. */
  throttle(keyId: string, n?: number, retryAfterSeconds?: number): void;
  /**
   * Fails, in the next batch requests, the entries whose body (SQS MessageBody, Kinesis Data decoded)
   * contains `marker`, `times` times (default once each; Infinity: always), answered in the batch's
   * own answer with `code`; the other entries go to the emulator.
   */
  failEntries(marker: string, opts: { code: string; message?: string; senderFault?: boolean; times?: number }): void;
  /**
   * Refuses, `times` times, a whole batch request that holds an entry whose body contains `marker`,
   * with `code` (HTTP 400), as SQS refuses a SendMessageBatch for one message over the queue's size.
   */
  refuseRequests(marker: string, opts: { code: string; message?: string; times: number }): void;
  /** Closes the connection of the next `n` requests signed by `keyId` once read, without an answer (none reaches the emulator). */
  hangUp(keyId: string, n?: number): void;
  /** Requests seen (verified or not), for tests that count. */
  readonly seen: number;
  /** Requests seen per key id (a request without a readable key counts as ''). */
  readonly seenBy: ReadonlyMap<string, number>;
  /** TCP connections accepted so far (keep-alive reuse shows as fewer connections than requests). */
  readonly connections: number;
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
}

interface EntryFault {
  code: string;
  message: string;
  senderFault: boolean;
  times: number;
}

/** A batch request's entries and how to read each one's body, for the batch actions the gate can fail entries of. */
const BATCHES: Record<string, { list: string; bodyOf(entry: Record<string, unknown>): string }> = {
  'AmazonSQS.SendMessageBatch': { list: 'Entries', bodyOf: (e) => String(e.MessageBody ?? '') },
  'Kinesis_20131202.PutRecords': { list: 'Records', bodyOf: (e) => Buffer.from(String(e.Data ?? ''), 'base64').toString('utf8') },
};

/**
 * The upstream answer's end-to-end headers: a proxy drops the hop-by-hop ones, so an emulator that
 * closes each connection (moto's HTTP/1.0 server) does not close the client's.
 */
function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { connection: _c, 'keep-alive': _k, 'transfer-encoding': _te, upgrade: _u, trailer: _t, ...rest } = headers;
  return rest;
}

export async function startAwsGate(t: Teardown, opts: AwsGateOptions): Promise<AwsGate> {
  const keys = new Map<string, string>();
  const throttled = new Map<string, { n: number; retryAfter: number }>();
  const entryFaults = new Map<string, EntryFault>();
  const refusals = new Map<string, { code: string; message: string; times: number }>();
  const hangUps = new Map<string, number>();
  const seenBy = new Map<string, number>();
  let seen = 0;
  let connections = 0;

  /** The refusal of a whole batch request, when one of its entries carries a refused marker. */
  const refusalOf = (target: string, body: Buffer) => {
    const batch = BATCHES[target];
    if (!batch || refusals.size === 0) return null;
    const entries = ((JSON.parse(body.toString('utf8')) as Record<string, unknown>)[batch.list] ?? []) as Array<Record<string, unknown>>;
    for (const [marker, refusal] of refusals) {
      if (!entries.some((e) => batch.bodyOf(e).includes(marker))) continue;
      if (--refusal.times <= 0) refusals.delete(marker);
      return refusal;
    }
    return null;
  };

  /**
   * The entries of a batch request that fail here, by index, and the body to forward without them
   * (null when none fails). Entries keep their Id (SQS); Kinesis answers by position, restored after.
   */
  const splitBatch = (target: string, body: Buffer) => {
    const batch = BATCHES[target];
    if (!batch || entryFaults.size === 0) return null;
    const request = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    const entries = (request[batch.list] ?? []) as Array<Record<string, unknown>>;
    const failing = new Map<number, EntryFault>();
    entries.forEach((e, i) => {
      const text = batch.bodyOf(e);
      for (const [marker, fault] of entryFaults) {
        if (fault.times > 0 && text.includes(marker)) {
          fault.times--;
          if (fault.times <= 0) entryFaults.delete(marker);
          failing.set(i, fault);
          break;
        }
      }
    });
    if (failing.size === 0) return null;
    const kept = entries.filter((_, i) => !failing.has(i));
    return { target, entries, failing, kept, forward: Buffer.from(JSON.stringify({ ...request, [batch.list]: kept })) };
  };

  /** The emulator's answer to the kept entries, with the failed ones put back as the service reports them. */
  const mergeAnswer = (split: NonNullable<ReturnType<typeof splitBatch>>, answer: Record<string, unknown>) => {
    if (split.target === 'AmazonSQS.SendMessageBatch') {
      const failed = [...((answer.Failed ?? []) as unknown[])];
      for (const [i, f] of split.failing) {
        failed.push({ Id: split.entries[i]?.Id, Code: f.code, Message: f.message, SenderFault: f.senderFault });
      }
      return { Successful: answer.Successful ?? [], Failed: failed };
    }
    const kept = [...((answer.Records ?? []) as unknown[])];
    const records = split.entries.map((_, i) => {
      const f = split.failing.get(i);
      return f ? { ErrorCode: f.code, ErrorMessage: f.message } : kept.shift();
    });
    return { ...answer, FailedRecordCount: Number(answer.FailedRecordCount ?? 0) + split.failing.size, Records: records };
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen++;
      let body = Buffer.concat(chunks);
      const v = verifySigV4(req, body, keys);
      seenBy.set(v.keyId ?? '', (seenBy.get(v.keyId ?? '') ?? 0) + 1);
      const hangs = v.keyId ? (hangUps.get(v.keyId) ?? 0) : 0;
      if (hangs > 0 && v.ok) {
        hangUps.set(v.keyId as string, hangs - 1);
        req.socket.destroy();
        return;
      }
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
      const refusal = refusalOf(String(req.headers['x-amz-target'] ?? ''), body);
      if (refusal) return answerError(res, opts.protocol, 400, refusal.code, refusal.message);
      const headers = { ...req.headers };
      const split = splitBatch(String(req.headers['x-amz-target'] ?? ''), body);
      if (split) {
        // The emulator checks no signature, so the shortened body goes on under the caller's.
        body = split.forward;
        headers['content-length'] = String(body.length);
        if (split.kept.length === 0) {
          res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'gate' });
          res.end(JSON.stringify(mergeAnswer(split, { Successful: [], Failed: [], Records: [], FailedRecordCount: 0 })));
          return;
        }
      }
      const up = httpRequest(
        { host: opts.upstream.host, port: opts.upstream.port, method: req.method, path: req.url, headers },
        (upRes) => {
          if (!split || upRes.statusCode !== 200) {
            res.writeHead(upRes.statusCode ?? 502, endToEnd(upRes.headers));
            upRes.pipe(res);
            return;
          }
          const parts: Buffer[] = [];
          upRes.on('data', (c: Buffer) => parts.push(c));
          upRes.on('end', () => {
            const merged = Buffer.from(JSON.stringify(mergeAnswer(split, JSON.parse(Buffer.concat(parts).toString('utf8')))));
            const { 'content-length': _length, ...rest } = endToEnd(upRes.headers);
            res.writeHead(200, { ...rest, 'content-length': String(merged.length) });
            res.end(merged);
          });
        },
      );
      up.on('error', (err) => {
        if (!res.headersSent) answerError(res, opts.protocol, 500, 'InternalFailure', err.message);
        else res.destroy();
      });
      up.end(body);
    });
  });
  server.on('connection', () => {
    connections++;
  });
  const { port, url } = await listenLocal(t, server);
  return {
    url,
    port,
    keys,
    throttle(keyId, n = 1, retryAfterSeconds = 3) {
      throttled.set(keyId, { n, retryAfter: retryAfterSeconds });
    },
    failEntries(marker, o) {
      entryFaults.set(marker, { code: o.code, message: o.message ?? o.code, senderFault: o.senderFault ?? false, times: o.times ?? 1 });
    },
    refuseRequests(marker, o) {
      refusals.set(marker, { code: o.code, message: o.message ?? o.code, times: o.times });
    },
    hangUp(keyId, n = 1) {
      hangUps.set(keyId, n);
    },
    get seen() {
      return seen;
    },
    seenBy,
    get connections() {
      return connections;
    },
  };
}
