/**
 * s3 delivery (../shared/spec/contract-details.md, "How each type delivers"): one PutObject to
 * `bucket` per event; the object is the event data (JSON text, content type application/json), the
 * metadata map its object metadata; the key is `key_template`, a JMESPath expression over
 * `{data, metadata, time: {rfc3339_nano, unix}}` (the event's time), by default
 * `<time>_<event id>.json`; `storage_class` defaults to STANDARD. With an `endpoint` (an emulator or
 * an S3-compatible service) buckets are addressed by path.
 */
import { PutObjectCommand, S3Client, type StorageClass } from '@aws-sdk/client-s3';
import { awsClientConfig, awsFailure, egressRefusal } from '../aws.ts';
import type { AllowList } from '../egress.ts';
import { bodyOf, metadataOf } from '../metadata.ts';
import { succeeded, type TypeSender } from '../sender.ts';
import { compileTemplate, isOutcome, s3TemplateInput } from '../template.ts';

export const DEFAULT_KEY_TEMPLATE = `join('', [time.rfc3339_nano, '_', metadata."event-id", '.json'])`;

// Object metadata travels as HTTP headers: S3 expects text that is not printable ASCII MIME-encoded (RFC 2047).
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const metadataValue = (v: string) => (PRINTABLE_ASCII.test(v) ? v : `=?UTF-8?B?${Buffer.from(v, 'utf8').toString('base64')}?=`);

export function createS3Sender(opts: { allow: AllowList }): TypeSender {
  return {
    open(target) {
      const cfg = awsClientConfig(target, opts.allow);
      const template =
        typeof target.config.key_template === 'string' && target.config.key_template.trim()
          ? target.config.key_template
          : DEFAULT_KEY_TEMPLATE;
      const keyOf = compileTemplate('key_template', template);
      const refused = egressRefusal(cfg.endpoint, opts.allow) ?? (isOutcome(keyOf) ? keyOf : null);
      const client = new S3Client({ ...cfg, forcePathStyle: cfg.endpoint !== undefined, requestChecksumCalculation: 'WHEN_REQUIRED' });
      const bucket = String(target.config.bucket ?? '');
      const storageClass = (typeof target.config.storage_class === 'string' && target.config.storage_class) || 'STANDARD';
      return {
        async deliver({ event, deliveryMetadata, signal }) {
          if (refused) return refused;
          if (isOutcome(keyOf)) return keyOf;
          const metadata = metadataOf(event, deliveryMetadata);
          const key = keyOf(s3TemplateInput(event, metadata));
          if (isOutcome(key)) return key;
          try {
            const out = await client.send(
              new PutObjectCommand({
                Bucket: bucket,
                Key: key,
                Body: bodyOf(event),
                ContentType: 'application/json',
                Metadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, metadataValue(v)])),
                StorageClass: storageClass as StorageClass,
              }),
              { abortSignal: signal },
            );
            return succeeded({ key, etag: out.ETag ?? null });
          } catch (err) {
            return awsFailure(err, signal);
          }
        },
        async close() {
          client.destroy();
        },
      };
    },
    async close() {},
  };
}
