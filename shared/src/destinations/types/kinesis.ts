import { awsKeyFields, iamPolicy, endpointField, icon, regionField, templateProblems, type DestinationTypeDef } from './def.ts';

export const kinesis: DestinationTypeDef = {
  type: 'kinesis',
  label: 'Amazon Kinesis',
  description: 'Put events into an Amazon Kinesis data stream.',
  icon: icon('<path d="M3 8c4-3 8 3 12 0s6 0 6 0M3 13c4-3 8 3 12 0s6 0 6 0M3 18c4-3 8 3 12 0s6 0 6 0"/>'),
  instructions: [
    '# Amazon Kinesis',
    '',
    'Each event is one record, sent in batches (PutRecords, up to 500 records a request): by default the JSON `{"metadata": {...}, "data": <event data>}`, where metadata holds `event-id`, `topic`, `timestamp`, the delivery metadata and the event metadata (a deployment may send the data alone).',
    '',
    '1. Create a data stream.',
    '2. Create an IAM user (or role credentials) with this policy, and an access key for it:',
    '',
    ...iamPolicy('kinesis:PutRecords', 'arn:aws:kinesis:us-east-1:123456789012:stream/orders'),
    '',
    '   A stream encrypted with a customer managed KMS key also needs `kms:GenerateDataKey` on that key.',
    '3. Enter the stream name, region and access key. `endpoint` points at a Kinesis-compatible service or an emulator.',
    '',
    'The partition key is the event id unless `partition_key_template` is set: a [JMESPath](https://jmespath.org) expression over `{data, metadata}`, for example `metadata."event-id"`, `data.customer_id` or `join(\'-\', [metadata.topic, data.region])`.',
  ].join('\n'),
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
      description:
        'JMESPath expression over {data, metadata} giving the partition key, for example data.customer_id; default the event id.',
      required: false,
      maxlength: 256,
    },
  ],
  credential_fields: awsKeyFields,
  validate: (config) => templateProblems(config, ['partition_key_template']),
  target: (c) => `${String(c.stream_name ?? '')} (${String(c.region ?? '')})`,
};
