import { icon, type DestinationTypeDef } from './def.ts';

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
    'A missing exchange fails the delivery (not_found); a message the broker nacks (for example a full queue with `x-overflow: reject-publish`) fails as rejected; while a broker blocks publishers (a memory or disk alarm) every delivery fails as throttled. Rejected and throttled deliveries are retried.',
  ].join('\n'),
  config_fields: [
    {
      key: 'server_url',
      type: 'text',
      label: 'Server',
      description: 'host:port of the broker.',
      required: true,
      pattern: '[^\\s:/]+:\\d{1,5}',
      format: 'address',
    },
    // AMQP counts a name's 255 in bytes (validate), not characters.
    { key: 'exchange', type: 'text', label: 'Exchange', description: 'Exchange to publish to.', required: true, maxlength: 255 },
    { key: 'tls', type: 'checkbox', label: 'TLS', description: 'Connect with TLS (amqps).', required: false, default: 'false' },
  ],
  credential_fields: [
    { key: 'username', type: 'text', label: 'Username', description: 'Broker user.', required: true },
    { key: 'password', type: 'text', label: 'Password', description: 'Broker password.', required: true, sensitive: true },
  ],
  validate: (config) =>
    typeof config.exchange === 'string' && Buffer.byteLength(config.exchange) > 255
      ? [{ path: 'body.config.exchange', message: 'must be at most 255 bytes in UTF-8 (AMQP counts bytes)' }]
      : [],
  target: (c) => `${String(c.server_url ?? '')} -> ${String(c.exchange ?? '')}`,
};
