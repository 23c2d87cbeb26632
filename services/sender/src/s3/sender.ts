/**
 * s3 delivery (../shared/spec/contract-details.md, "How each type delivers"): one PutObject to
 * `bucket` per event; the object is the event data (JSON text, content type application/json), the
 * metadata map its object metadata; the key is `key_template`, a JMESPath expression over
 * `{data, metadata, time: {rfc3339_nano, unix}}` (the event's time), by default
 * `<time>_<event id>.json` (a key with a `.` or `..` segment fails as rejected); `storage_class`
 * defaults to STANDARD. With an `endpoint` (an emulator or an S3-compatible service) buckets are
 * addressed by path; without, by host (`<bucket>.s3.<region>.amazonaws.com`) unless the name has
 * dots (then by path).
 *
 * S3 has no batch put, so each delivery is one request; it is made as light as a webhook's: signed
 * here (sigv4.ts) and sent through the egress-checked undici agent the HTTP types share (post.ts),
 * whose keep-alive connections are pooled per origin across destinations. The AWS SDK's client spent
 * about three times the CPU of the request itself on its middleware stack, schemas, checksum
 * plumbing and async hashing (docs/performance.md). An error answer is read as the SDK reads it
 * (aws.ts): S3's XML `<Code>` and `<Message>`, the HTTP status, a Retry-After.
 */
import type { Dispatcher } from 'undici';
import { awsFailure, egressRefusal } from '../aws.ts';
import type { AllowList } from '../egress.ts';
import { bodyOf, metadataOf } from '../metadata.ts';
import { post } from '../post.ts';
import { failed, type Outcome, succeeded, type TypeSender } from '../sender.ts';
import { createSigner, uriEncode } from '../sigv4.ts';
import { compileTemplate, isOutcome, s3TemplateInput } from '../template.ts';

export const DEFAULT_KEY_TEMPLATE = `join('', [time.rfc3339_nano, '_', metadata."event-id", '.json'])`;

// Object metadata travels as HTTP headers: S3 expects text that is not printable ASCII MIME-encoded (RFC 2047).
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const metadataValue = (v: string) => (PRINTABLE_ASCII.test(v) ? v : `=?UTF-8?B?${Buffer.from(v, 'utf8').toString('base64')}?=`);
const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Bytes of an error answer kept (S3's XML error is well under it). */
const ANSWER_MAX_BYTES = 16 * 1024;

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const xmlField = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];

/** Where the objects of `bucket` are PUT: the origin, the Host and the path prefix of their keys. */
export function bucketLocation(endpoint: string | undefined, region: string, bucket: string) {
  if (endpoint) {
    const u = new URL(endpoint);
    return { origin: u.origin, host: u.host, prefix: `${u.pathname.replace(/\/+$/, '')}/${uriEncode(bucket)}/` };
  }
  const domain = region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
  if (/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/.test(bucket)) {
    const host = `${bucket}.s3.${region}.${domain}`;
    return { origin: `https://${host}`, host, prefix: '/' };
  }
  const host = `s3.${region}.${domain}`;
  return { origin: `https://${host}`, host, prefix: `/${uriEncode(bucket)}/` };
}

/** The path of `key` under a bucket's prefix, encoded once, as S3 signs it. */
const keyPath = (prefix: string, key: string) => `${prefix}${key.split('/').map(uriEncode).join('/')}`;

/** Where an object of `bucket` is PUT: the origin, the Host and the path (encoded once, as S3 signs it). */
export function objectLocation(endpoint: string | undefined, region: string, bucket: string, key: string) {
  const { origin, host, prefix } = bucketLocation(endpoint, region, bucket);
  return { origin, host, path: keyPath(prefix, key) };
}

export function createS3Sender(opts: { allow: AllowList; dispatcher: Dispatcher }): TypeSender {
  return {
    open(target) {
      const { config, credentials } = target;
      const endpoint = text(config.endpoint);
      const region = text(config.region) ?? 'us-east-1';
      const template = typeof config.key_template === 'string' && config.key_template.trim() ? config.key_template : DEFAULT_KEY_TEMPLATE;
      const keyOf = compileTemplate('key_template', template);
      const bucket = String(config.bucket ?? '');
      const storageClass = (typeof config.storage_class === 'string' && config.storage_class) || 'STANDARD';
      const refused =
        egressRefusal(endpoint, opts.allow) ??
        (isOutcome(keyOf) ? keyOf : null) ??
        (bucket === '' ? failed('invalid_config', 'no bucket') : null);
      // Once per destination, not per delivery: a refused one (a bad endpoint URL among them) never sends.
      const at = refused ? null : bucketLocation(endpoint, region, bucket);
      const sign = createSigner(
        {
          accessKeyId: String(credentials.key ?? ''),
          secretAccessKey: String(credentials.secret ?? ''),
          ...(text(credentials.session) ? { sessionToken: String(credentials.session) } : {}),
        },
        region,
        's3',
      );
      return {
        async deliver({ event, deliveryMetadata, signal }) {
          // Both are set exactly when the destination is not refused.
          if (!at || isOutcome(keyOf)) return refused as Outcome;
          const metadata = metadataOf(event, deliveryMetadata);
          const key = keyOf(s3TemplateInput(event, metadata));
          if (isOutcome(key)) return key;
          // A URL's "." and ".." segments are resolved before it is sent, so the path S3 gets is not the one signed.
          if (key.split('/').some((seg) => seg === '.' || seg === '..')) {
            return failed(
              'rejected',
              `key_template gave the key ${JSON.stringify(key)}, whose "." or ".." segments an S3 URL cannot carry`,
            );
          }
          const body = bodyOf(event);
          try {
            const path = keyPath(at.prefix, key);
            const headers: Record<string, string> = {
              host: at.host,
              'content-type': 'application/json',
              'x-amz-storage-class': storageClass,
            };
            for (const [k, v] of Object.entries(metadata)) {
              if (!HEADER_TOKEN.test(k)) return failed('rejected', `metadata key ${JSON.stringify(k)} cannot be an S3 metadata header`);
              headers[`x-amz-meta-${k.toLowerCase()}`] = metadataValue(v);
            }
            sign('PUT', path, headers, body);
            const res = await post(opts.dispatcher, `${at.origin}${path}`, {
              method: 'PUT',
              headers,
              body,
              signal,
              maxBytes: ANSWER_MAX_BYTES,
              keepHeader: 'etag',
            });
            if (res.statusCode >= 200 && res.statusCode < 300) return succeeded({ key, etag: res.kept ?? null });
            const code = xmlField(res.text, 'Code');
            const requestId = xmlField(res.text, 'RequestId');
            return awsFailure(
              {
                name: code ?? 'UnknownError',
                message: xmlField(res.text, 'Message') ?? code ?? `HTTP ${res.statusCode}`,
                $metadata: { httpStatusCode: res.statusCode, ...(requestId ? { requestId } : {}) },
                $response: { statusCode: res.statusCode, headers: res.retryAfter ? { 'retry-after': res.retryAfter } : {} },
              },
              signal,
            );
          } catch (err) {
            // A bad endpoint URL never gets here (refused above); the network's failures and the deadline do.
            return awsFailure(err, signal);
          }
        },
        async close() {},
      };
    },
    async close() {},
  };
}
