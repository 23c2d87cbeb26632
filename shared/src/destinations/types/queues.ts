import { awsKeyFields, endpointField, icon, regionField, type DestinationTypeDef } from './def.ts';

export const sqs: DestinationTypeDef = {
  type: 'sqs',
  label: 'Amazon SQS',
  description: 'Send events to an Amazon SQS queue.',
  icon: icon('<rect x="3" y="6" width="18" height="12" rx="2"/><path d="M7 12h10"/>'),
  instructions: [
    '# Amazon SQS',
    '',
    'Each event is sent as one message: the body is the event `data` as JSON; the metadata (`event-id`, `topic`, `timestamp`, your delivery metadata and the event metadata) is one String message attribute named `metadata`, holding it as JSON.',
    '',
    '1. Create a queue (standard or FIFO) and copy its URL, for example `https://sqs.us-east-1.amazonaws.com/123456789012/orders`.',
    '2. Create an IAM user (or role credentials) with this policy, and an access key for it:',
    '',
    '```json',
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "arn:aws:sqs:us-east-1:123456789012:orders"}]}',
    '```',
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
    },
    endpointField('SQS'),
    regionField(false),
  ],
  credential_fields: awsKeyFields,
  target: (c) => String(c.queue_url ?? ''),
  targetUrl: (c) => (typeof c.queue_url === 'string' ? c.queue_url : undefined),
};

export const rabbitmq: DestinationTypeDef = {
  type: 'rabbitmq',
  label: 'RabbitMQ',
  description: 'Publish events to a RabbitMQ exchange, routed by topic.',
  icon: icon('<path d="M4 20V4h5v6h6V4h5v16z"/>'),
  instructions: [
    '# RabbitMQ',
    '',
    'Each event is published to the exchange with the event topic as routing key, as a persistent message with content type `application/json`; the body is the event `data`, the metadata (`event-id`, `topic`, `timestamp`, delivery metadata, event metadata) goes in the AMQP headers and the event id is the message id. A delivery succeeds once the broker confirms it (publisher confirms).',
    '',
    '1. Declare the exchange (a `topic` exchange lets consumers bind by event topic, for example `user.*`) and bind your queues to it.',
    '2. Create a user for Switchyard in the virtual host `/` with write permission on the exchange, for example `rabbitmqctl set_permissions -p / switchyard "^$" "^events$" "^$"` (configure nothing, write `events`, read nothing).',
    '3. Enter the broker as `host:port` (5672, or 5671 with TLS on), the exchange, and the user. Turn TLS on to connect with `amqps`.',
    '',
    'A missing exchange fails the delivery (not_found); a broker that blocks publishers (a memory or disk alarm) fails it as throttled, and it is retried.',
  ].join('\n'),
  config_fields: [
    {
      key: 'server_url',
      type: 'text',
      label: 'Server',
      description: 'host:port of the broker.',
      required: true,
      pattern: '[^\\s:/]+:\\d{1,5}',
    },
    { key: 'exchange', type: 'text', label: 'Exchange', description: 'Exchange to publish to.', required: true, maxlength: 255 },
    { key: 'tls', type: 'checkbox', label: 'TLS', description: 'Connect with TLS (amqps).', required: false, default: 'false' },
  ],
  credential_fields: [
    { key: 'username', type: 'text', label: 'Username', description: 'Broker user.', required: true },
    { key: 'password', type: 'text', label: 'Password', description: 'Broker password.', required: true, sensitive: true },
  ],
  target: (c) => `${String(c.server_url ?? '')} -> ${String(c.exchange ?? '')}`,
};

export const servicebus: DestinationTypeDef = {
  type: 'servicebus',
  label: 'Azure Service Bus',
  description: 'Send events to an Azure Service Bus queue or topic.',
  icon: icon('<path d="M3 7h18M3 12h18M3 17h18"/>'),
  instructions:
    '# Azure Service Bus\n\nCreate a queue or topic and a shared access policy with Send rights; paste its connection string. Metadata becomes application properties.',
  config_fields: [
    { key: 'name', type: 'text', label: 'Queue or topic', description: 'Name of the queue or topic.', required: true, maxlength: 260 },
  ],
  credential_fields: [
    {
      key: 'connection_string',
      type: 'text',
      label: 'Connection string',
      description: 'Endpoint=sb://...;SharedAccessKeyName=...;SharedAccessKey=...',
      required: true,
      sensitive: true,
      pattern: 'Endpoint=sb://.+',
    },
  ],
  target: (c) => String(c.name ?? ''),
};

export const pubsub: DestinationTypeDef = {
  type: 'pubsub',
  label: 'Google Cloud Pub/Sub',
  description: 'Publish events to a Google Cloud Pub/Sub topic.',
  icon: icon('<circle cx="12" cy="12" r="3"/><circle cx="4" cy="6" r="2"/><circle cx="20" cy="6" r="2"/><circle cx="12" cy="21" r="2"/>'),
  instructions:
    '# Google Cloud Pub/Sub\n\nCreate a topic and a service account with the Pub/Sub Publisher role; paste its JSON key. Metadata becomes message attributes.',
  config_fields: [
    {
      key: 'project_id',
      type: 'text',
      label: 'Project ID',
      description: 'Google Cloud project.',
      required: true,
      pattern: '[a-z][a-z0-9-]{4,28}[a-z0-9]',
    },
    { key: 'topic', type: 'text', label: 'Topic', description: 'Pub/Sub topic id.', required: true, maxlength: 255 },
    endpointField('Pub/Sub'),
  ],
  credential_fields: [
    {
      key: 'service_account_json',
      type: 'text',
      label: 'Service account key',
      description: 'The JSON key file of the service account.',
      required: true,
      sensitive: true,
    },
  ],
  target: (c) => `projects/${String(c.project_id ?? '')}/topics/${String(c.topic ?? '')}`,
};
