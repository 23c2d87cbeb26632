import { createPrivateKey } from 'node:crypto';
import type { Problem } from '../../errors.ts';
import { awsKeyFields, endpointField, icon, regionField, type DestinationTypeDef } from './def.ts';

/**
 * A Pub/Sub endpoint: `host:port` as emulators are given (PUBSUB_EMULATOR_HOST), or an http(s) URL
 * whose port is optional; hosts are names or addresses (IPv6 in brackets).
 */
const HOST = '(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\\[[0-9A-Fa-f:.]+\\])';
export const PUBSUB_ENDPOINT = `${HOST}:\\d{1,5}|https?://${HOST}(?::\\d{1,5})?/?`;

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
    '   ```json',
    '   {',
    '     "Version": "2012-10-17",',
    '     "Statement": [{',
    '       "Effect": "Allow",',
    '       "Action": "sqs:SendMessage",',
    '       "Resource": "arn:aws:sqs:us-east-1:123456789012:orders"',
    '     }]',
    '   }',
    '   ```',
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
  instructions: [
    '# Azure Service Bus',
    '',
    "Each event is sent as one message to the queue or topic named in **Queue or topic**: the body is the event data as JSON (content type `application/json`), the message id is the event id, and the metadata (`event-id`, `topic`, `timestamp`, the destination's delivery metadata, the event's metadata) becomes application properties.",
    '',
    '## Setup',
    '1. In your Service Bus namespace, create the queue, or the topic and at least one subscription (a topic without subscriptions drops what it receives).',
    '2. Under the queue or topic (or the namespace), add a **Shared access policy** with the **Send** claim only.',
    '3. Copy its **Primary connection string** (`Endpoint=sb://<namespace>.servicebus.windows.net/;SharedAccessKeyName=...;SharedAccessKey=...`) into **Connection string**. An `EntityPath` in it is ignored: the name field decides.',
    '',
    'Permissions: `Send` on the entity. A refused key is a failed attempt with reason `unauthorized`; a missing queue or topic, `not_found`; a busy namespace (ServerBusy), `throttled`.',
  ].join('\n'),
  remote_setup_url: 'https://learn.microsoft.com/azure/service-bus-messaging/service-bus-quickstart-portal',
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
  validate: (_config, credentials) => {
    const cs = credentials.connection_string;
    if (typeof cs !== 'string') return [];
    const parts = new Map(
      cs
        .split(';')
        .filter((p) => p.includes('='))
        .map((p) => [p.slice(0, p.indexOf('=')).trim().toLowerCase(), p.slice(p.indexOf('=') + 1).trim()] as const),
    );
    const sas = parts.has('sharedaccesssignature');
    if (!sas && !(parts.get('sharedaccesskeyname') && parts.get('sharedaccesskey'))) {
      return [
        {
          path: 'body.credentials.connection_string',
          message: 'must hold SharedAccessKeyName and SharedAccessKey (or a SharedAccessSignature)',
        },
      ];
    }
    return [];
  },
  target: (c) => String(c.name ?? ''),
};

/**
 * The problems of a Google service account key file (the JSON a service account's "Add key"
 * downloads). With `emulator` (an endpoint is set: an emulator or a private endpoint, where Google's
 * emulator ignores credentials) it need only be a JSON object with a `type`, as the other service
 * checks it, so test configurations with a placeholder key are accepted; without, it must be a
 * usable key, so a wrong file is refused on save rather than failing every delivery.
 */
export function checkServiceAccountJson(text: unknown, emulator = false): string | null {
  if (typeof text !== 'string') return null;
  let key: unknown;
  try {
    key = JSON.parse(text);
  } catch {
    return 'must be the JSON key file of a service account (this is not JSON)';
  }
  if (typeof key !== 'object' || key === null || Array.isArray(key))
    return 'must be the JSON key file of a service account (a JSON object)';
  const k = key as Record<string, unknown>;
  if (emulator)
    return Object.hasOwn(k, 'type')
      ? null
      : 'must carry a "type" (with an endpoint, a placeholder key such as {"type":"service_account"} will do)';
  if (k.type !== 'service_account') return 'must be a service account key: its "type" must be "service_account"';
  if (typeof k.client_email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(k.client_email))
    return 'must carry the service account\'s "client_email"';
  if (typeof k.private_key !== 'string') return 'must carry the service account\'s "private_key"';
  try {
    createPrivateKey(k.private_key);
  } catch {
    return 'has a "private_key" that is not a readable PEM private key';
  }
  return null;
}

export const pubsub: DestinationTypeDef = {
  type: 'pubsub',
  label: 'Google Cloud Pub/Sub',
  description: 'Publish events to a Google Cloud Pub/Sub topic.',
  icon: icon('<circle cx="12" cy="12" r="3"/><circle cx="4" cy="6" r="2"/><circle cx="20" cy="6" r="2"/><circle cx="12" cy="21" r="2"/>'),
  instructions: [
    '# Google Cloud Pub/Sub',
    '',
    "Each event is published as one message to `projects/<Project ID>/topics/<Topic>`: the message data is the event data as JSON, and the metadata (`event-id`, `topic`, `timestamp`, the destination's delivery metadata, the event's metadata) becomes message attributes.",
    '',
    '## Setup',
    '1. Create the topic (`gcloud pubsub topics create <topic>`), and a subscription to read it.',
    '2. Create a service account and grant it **Pub/Sub Publisher** (`roles/pubsub.publisher`) on the topic.',
    '3. Create a JSON key for the service account (IAM > Service accounts > Keys > Add key > JSON) and paste the whole file into **Service account key**. It is checked on save: it must be a service account key with `client_email` and `private_key` (with an **Endpoint** set, any JSON object with a `type` will do).',
    '',
    "**Endpoint** is for emulators and private endpoints: `host:port` (as `PUBSUB_EMULATOR_HOST` takes it) or `http://host:port` connect without TLS and send no credentials, like Google's emulator; `https://host[:port]` connects with TLS. Leave it empty for Google.",
    '',
    'Permissions: `pubsub.topics.publish` on the topic. Refused credentials are failed attempts with reason `unauthorized`; a missing topic, `not_found`; quota exhaustion, `throttled`.',
  ].join('\n'),
  remote_setup_url: 'https://cloud.google.com/pubsub/docs/create-topic',
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
    {
      key: 'endpoint',
      type: 'text',
      label: 'Endpoint',
      description: 'For an emulator or a private endpoint: host:port (as PUBSUB_EMULATOR_HOST), or an http(s) URL. Empty for Google.',
      required: false,
      pattern: PUBSUB_ENDPOINT,
    },
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
  validate: (config, credentials, rules) => {
    // The placeholder-key check with an endpoint (an emulator), or always when answering as the peer does.
    const lenient = rules?.peerCompatible === true || (typeof config.endpoint === 'string' && config.endpoint !== '');
    const problem = checkServiceAccountJson(credentials.service_account_json, lenient);
    return problem ? [{ path: 'body.credentials.service_account_json', message: problem } satisfies Problem] : [];
  },
  target: (c) => `projects/${String(c.project_id ?? '')}/topics/${String(c.topic ?? '')}`,
};
