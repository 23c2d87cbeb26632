import type { Problem } from '../../errors.ts';
import { awsKeyFields, awsKeyProblems, iamPolicy, endpointField, icon, regionField, type DestinationTypeDef } from './def.ts';

/**
 * The region in an AWS queue URL, if it is one: sqs.<region>.amazonaws.com, sqs-fips.<region>...,
 * the legacy <region>.queue.amazonaws.com and a VPC endpoint's <id>.sqs.<region>.vpce.amazonaws.com.
 */
export function regionOfQueueUrl(url: string): string | undefined {
  const host = /^https?:\/\/([^/:?#]+)(?::\d+)?\//i.exec(url)?.[1]?.toLowerCase();
  if (!host) return undefined;
  return (
    /(?:^|\.)sqs(?:-fips)?[.-]([a-z0-9-]+)\.(?:vpce\.)?amazonaws\.com(?:\.cn)?$/.exec(host)?.[1] ??
    /^([a-z0-9-]+)\.queue\.amazonaws\.com(?:\.cn)?$/.exec(host)?.[1]
  );
}

/**
 * A region that contradicts an AWS queue URL's own, with no endpoint set: every request is sent to
 * the URL's region signed for another, which AWS refuses. With an endpoint (an emulator) it is kept.
 */
function regionProblems(config: Record<string, unknown>): Problem[] {
  const { queue_url: url, region, endpoint } = config;
  if (typeof url !== 'string' || typeof region !== 'string' || region === '' || (typeof endpoint === 'string' && endpoint !== ''))
    return [];
  const inUrl = regionOfQueueUrl(url);
  return inUrl && inUrl !== region
    ? [{ path: 'body.config.region', message: `must be the queue URL's region (${inUrl}), or empty to take it from the URL` }]
    : [];
}

export const sqs: DestinationTypeDef = {
  type: 'sqs',
  label: 'Amazon SQS',
  description: 'Send events to an Amazon SQS queue.',
  icon: icon('<rect x="3" y="6" width="18" height="12" rx="2"/><path d="M7 12h10"/>'),
  instructions: [
    '# Amazon SQS',
    '',
    'Each event is sent as one message (up to 10 in one SendMessageBatch request, which the SendMessage permission below covers): the body is the event `data` as JSON; the metadata (`event-id`, `topic`, `timestamp`, your delivery metadata and the event metadata) is one String message attribute named `metadata`, holding it as JSON.',
    '',
    '1. Create a queue (standard or FIFO) and copy its URL, for example `https://sqs.us-east-1.amazonaws.com/123456789012/orders`.',
    '2. Create an IAM user (or role credentials) with this policy, and an access key for it:',
    '',
    ...iamPolicy('sqs:SendMessage', 'arn:aws:sqs:us-east-1:123456789012:orders'),
    '',
    '   A queue encrypted with a customer managed KMS key also needs `kms:GenerateDataKey` and `kms:Decrypt` on that key.',
    '3. Enter the queue URL, the region (taken from the URL when left empty: `sqs.<region>`, `sqs-fips.<region>`, `<region>.queue` and VPC endpoint URLs all name it) and the access key. `endpoint` points at an SQS-compatible service or an emulator (ElasticMQ, LocalStack) instead of AWS.',
    '',
    'FIFO queues (`.fifo`) get the destination id as message group and the event id as deduplication id (an id over 128 characters, more than SQS takes, as its SHA-256 in hex).',
    '',
    "A message over the queue's maximum message size fails as rejected, and is retried.",
  ].join('\n'),
  config_fields: [
    {
      key: 'queue_url',
      type: 'text',
      label: 'Queue URL',
      description: 'The URL of the SQS queue.',
      required: true,
      pattern: 'https?://.+',
      format: 'address',
    },
    endpointField('SQS'),
    regionField(false),
  ],
  credential_fields: awsKeyFields,
  validate: (config, credentials) => [...regionProblems(config), ...awsKeyProblems(credentials)],
  target: (c) => String(c.queue_url ?? ''),
  targetUrl: (c) => (typeof c.queue_url === 'string' ? c.queue_url : undefined),
};
