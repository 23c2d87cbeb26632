import { awsKeyFields, endpointField, icon, regionField, type DestinationTypeDef } from './def.ts';

export const kinesis: DestinationTypeDef = {
  type: 'kinesis',
  label: 'Amazon Kinesis',
  description: 'Put events into an Amazon Kinesis data stream.',
  icon: icon('<path d="M3 8c4-3 8 3 12 0s6 0 6 0M3 13c4-3 8 3 12 0s6 0 6 0M3 18c4-3 8 3 12 0s6 0 6 0"/>'),
  instructions:
    '# Amazon Kinesis\n\nCreate a data stream and an IAM user allowed to `kinesis:PutRecord`. The partition key defaults to the event id.',
  config_fields: [
    {
      key: 'stream_name',
      type: 'text',
      label: 'Stream name',
      description: 'Name of the data stream.',
      required: true,
      pattern: '[a-zA-Z0-9_.-]{1,128}',
    },
    regionField(true),
    endpointField('Kinesis'),
    {
      key: 'partition_key_template',
      type: 'text',
      label: 'Partition key template',
      description: 'Template of the partition key, for example {{event.metadata.customer}}; default the event id.',
      required: false,
      maxlength: 256,
    },
  ],
  credential_fields: awsKeyFields,
  target: (c) => `${String(c.stream_name ?? '')} (${String(c.region ?? '')})`,
};

export const s3: DestinationTypeDef = {
  type: 's3',
  label: 'Amazon S3',
  description: 'Write each event as an object into an Amazon S3 bucket.',
  icon: icon('<ellipse cx="12" cy="6" rx="8" ry="3"/><path d="M4 6v12c0 1.7 3.6 3 8 3s8-1.3 8-3V6"/>'),
  instructions: '# Amazon S3\n\nCreate a bucket and an IAM user allowed to `s3:PutObject`. Metadata becomes object metadata.',
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
      description: 'Template of the object key; default {{event.topic}}/{{event.time}}-{{event.id}}.json.',
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
  target: (c) => `s3://${String(c.bucket ?? '')}`,
};

export const gateway: DestinationTypeDef = {
  type: 'gateway',
  label: 'Event Gateway',
  description: 'Forward events to a hosted event gateway connection.',
  icon: icon('<path d="M4 12h16M14 6l6 6-6 6"/>'),
  instructions: '# Event Gateway\n\nCreate a source in the event gateway and paste its token here.',
  remote_setup_url: 'https://dashboard.hookdeck.com/connect',
  configOptional: true,
  config_fields: [],
  credential_fields: [
    { key: 'token', type: 'text', label: 'Token', description: 'Gateway source token.', required: true, sensitive: true },
  ],
  target: () => 'Event Gateway',
};
