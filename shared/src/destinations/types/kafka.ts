import { HOST_NAME, icon, templateProblems, type DestinationTypeDef } from './def.ts';

/** `host:port` entries, comma separated (kafkajs splits a broker at its first `:`). */
const BROKER = `${HOST_NAME}:\\d{1,5}`;
/** Kafka's own rule for topic names (`.` and `..` are refused by the broker too). */
const TOPIC_NAME = '(?!\\.\\.?$)[a-zA-Z0-9._-]{1,249}';

export const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;

/**
 * A tenant's own Kafka cluster: one record per event, produced by a producer of the destination's
 * own (never the service's internal Kafka client or brokers, unless the tenant names them).
 */
export const kafka: DestinationTypeDef = {
  type: 'kafka',
  label: 'Apache Kafka',
  description: 'Produce events to a topic of your Kafka cluster.',
  icon: icon(
    '<circle cx="12" cy="5" r="2"/><circle cx="12" cy="12" r="2"/><circle cx="12" cy="19" r="2"/><circle cx="19" cy="8" r="2"/><circle cx="19" cy="16" r="2"/><path d="M12 7v3M12 14v3M14 11l3-2M14 13l3 2"/>',
  ),
  instructions: [
    '# Apache Kafka',
    '',
    "Each event is produced as one record to **Topic** on your cluster (acks=all): the value is the event data as JSON, the key is the partition key (the event id unless **Partition key template** says otherwise), and the headers carry the metadata (`event-id`, `topic`, `timestamp`, the destination's delivery metadata, the event's metadata) plus `content-type: application/json`.",
    '',
    '## Setup',
    '1. Create the topic (topics are never created for you).',
    "2. Create a user for Switchyard with the SASL mechanism your listener uses (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), for example `kafka-configs.sh --alter --entity-type users --entity-name switchyard --add-config 'SCRAM-SHA-512=[password=...]'`.",
    '3. Allow it to write the topic: `kafka-acls.sh --add --allow-principal User:switchyard --operation Write --operation Describe --topic <topic>` (with an authorizer configured).',
    '4. List the bootstrap brokers (`host:port`, comma separated) of the SASL listener. **TLS** (on by default) uses SASL_SSL; turn it off only for a SASL_PLAINTEXT listener on a private network.',
    '',
    '**Partition key template** is a JMESPath expression over `{data, metadata}`, for example `data.customer_id` or `metadata."event-id"`; records with the same key keep their order. An event for which it gives nothing, or fails (a function given the wrong type by that event), fails with reason `rejected`.',
    '',
    'Permissions: Write and Describe on the topic. Refused credentials are failed attempts with reason `unauthorized`; a missing topic, `not_found`.',
  ].join('\n'),
  remote_setup_url: 'https://kafka.apache.org/documentation/#security_sasl',
  config_fields: [
    {
      key: 'brokers',
      type: 'text',
      label: 'Bootstrap brokers',
      description: 'host:port of one or more brokers, comma separated.',
      required: true,
      maxlength: 2048,
      pattern: `${BROKER}(?:\\s*,\\s*${BROKER})*`,
      format: 'address',
    },
    { key: 'topic', type: 'text', label: 'Topic', description: 'Topic to produce to.', required: true, pattern: TOPIC_NAME },
    {
      key: 'sasl_mechanism',
      type: 'select',
      label: 'SASL mechanism',
      description: 'How the user authenticates.',
      required: true,
      options: [
        { label: 'PLAIN', value: 'plain' },
        { label: 'SCRAM-SHA-256', value: 'scram-sha-256' },
        { label: 'SCRAM-SHA-512', value: 'scram-sha-512' },
      ],
    },
    { key: 'tls', type: 'checkbox', label: 'TLS', description: 'Connect with TLS (SASL_SSL).', required: false, default: 'true' },
    {
      key: 'partition_key_template',
      type: 'text',
      label: 'Partition key template',
      description: 'JMESPath expression over {data, metadata} giving the record key; default the event id.',
      required: false,
      maxlength: 256,
    },
  ],
  credential_fields: [
    { key: 'username', type: 'text', label: 'Username', description: 'SASL user.', required: true, maxlength: 255 },
    { key: 'password', type: 'text', label: 'Password', description: 'SASL password.', required: true, sensitive: true },
  ],
  validate: (config) => templateProblems(config, ['partition_key_template']),
  target: (c) => `${String(c.brokers ?? '')} -> ${String(c.topic ?? '')}`,
};
