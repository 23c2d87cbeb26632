import {
  awsKeyFields,
  awsKeyProblems,
  iamPolicy,
  endpointField,
  icon,
  regionField,
  templateProblems,
  type DestinationTypeDef,
} from './def.ts';
import type { Problem } from '../../errors.ts';

/**
 * S3's bucket naming rules beyond the field's pattern (letters, digits, dots and hyphens, 3-63):
 * names it never creates, so no delivery to them could succeed.
 */
function bucketProblems(bucket: unknown): Problem[] {
  if (typeof bucket !== 'string') return [];
  const why = bucket.includes('..')
    ? 'must not have two dots in a row'
    : /\.-|-\./.test(bucket)
      ? 'must not have a dot next to a hyphen'
      : /^\d+\.\d+\.\d+\.\d+$/.test(bucket)
        ? 'must not be an IP address'
        : /^(xn--|sthree-|amzn-s3-demo-)/.test(bucket) || /(-s3alias|--ol-s3|--x-s3|--table-s3|\.mrap)$/.test(bucket)
          ? 'must not use a prefix or suffix S3 reserves (xn--, sthree-, -s3alias, --ol-s3 ...)'
          : null;
  return why ? [{ path: 'body.config.bucket', message: why }] : [];
}

export const s3: DestinationTypeDef = {
  type: 's3',
  label: 'Amazon S3',
  description: 'Write each event as an object into an Amazon S3 bucket.',
  icon: icon('<ellipse cx="12" cy="6" rx="8" ry="3"/><path d="M4 6v12c0 1.7 3.6 3 8 3s8-1.3 8-3V6"/>'),
  instructions: [
    '# Amazon S3',
    '',
    'Each event is one object (PutObject): its content is the event `data` as JSON (`application/json`), its object metadata holds `event-id`, `topic`, `timestamp`, the delivery metadata and the event metadata.',
    '',
    '1. Create a bucket.',
    '2. Create an IAM user (or role credentials) with this policy, and an access key for it:',
    '',
    ...iamPolicy('s3:PutObject', 'arn:aws:s3:::my-bucket/*'),
    '',
    '   A bucket encrypted with a customer managed KMS key also needs `kms:GenerateDataKey` on that key.',
    '3. Enter the bucket, region and access key. `endpoint` points at an S3-compatible service or an emulator (buckets are then addressed by path).',
    '',
    "The object key is a [JMESPath](https://jmespath.org) expression over `{data, metadata, time: {rfc3339_nano, unix}}` (the event time), by default `join('', [time.rfc3339_nano, '_', metadata.\"event-id\", '.json'])`; for example `join('/', [metadata.topic, metadata.\"event-id\"])` groups objects by topic. `storage_class` is STANDARD unless set. A key with a `.` or `..` segment (`a/../b`) fails the delivery as rejected.",
  ].join('\n'),
  config_fields: [
    {
      key: 'bucket',
      type: 'text',
      label: 'Bucket',
      description: 'Bucket name.',
      required: true,
      pattern: '[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]',
    },
    regionField(true),
    endpointField('S3'),
    {
      key: 'key_template',
      type: 'text',
      label: 'Key template',
      description:
        'JMESPath expression over {data, metadata, time: {rfc3339_nano, unix}} giving the object key; default <time>_<event id>.json.',
      required: false,
      maxlength: 1024,
    },
    {
      key: 'storage_class',
      type: 'select',
      label: 'Storage class',
      description: 'S3 storage class of the objects.',
      required: false,
      default: 'STANDARD',
      options: ['STANDARD', 'STANDARD_IA', 'ONEZONE_IA', 'INTELLIGENT_TIERING', 'GLACIER_IR'].map((v) => ({ label: v, value: v })),
    },
  ],
  credential_fields: awsKeyFields,
  validate: (config, credentials) => [
    ...templateProblems(config, ['key_template']),
    ...bucketProblems(config.bucket),
    ...awsKeyProblems(credentials),
  ],
  target: (c) => `s3://${String(c.bucket ?? '')}`,
};
