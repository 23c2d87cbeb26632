import { awsKeyFields, iamPolicy, endpointField, icon, regionField, type DestinationTypeDef } from './def.ts';

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
    '3. Enter the queue URL, the region (taken from the URL when left empty) and the access key. `endpoint` points at an SQS-compatible service or an emulator (ElasticMQ, LocalStack) instead of AWS.',
    '',
    'FIFO queues (`.fifo`) get the destination id as message group and the event id as deduplication id.',
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
  target: (c) => String(c.queue_url ?? ''),
  targetUrl: (c) => (typeof c.queue_url === 'string' ? c.queue_url : undefined),
};
