import { SECRET_MIN_LENGTH, type Setting } from './setting.ts';

/**
 * Settings every service process reads: its log level, tracing, the log (Kafka or the embedded one)
 * and the database the runtime opens (shared/src/runtime.ts), the encryption key of its cipher, the
 * metrics listener, and the few settings more than one service reads (TOPICS: the gateway and the
 * router; WEBHOOK_HEADER_PREFIX: the gateway and the sender). Validated by every process.
 */
export const COMMON_SETTINGS = {
  LOG_LEVEL: {
    kind: 'string',
    default: 'info',
    enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    description: 'pino log level.',
  },
  KAFKA_BROKERS: {
    kind: 'list',
    default: '',
    format: 'host-port',
    description:
      'Comma-separated Kafka bootstrap brokers, each host:port. Empty: npm start uses the embedded log under DATA_DIR (one process only); a service run on its own requires it.',
  },
  KAFKA_CLIENT_ID: { kind: 'string', default: 'switchyard', description: 'Kafka client id prefix; each service appends its name.' },
  KAFKA_TOPIC_PREFIX: {
    kind: 'string',
    default: 'switchyard.',
    description: 'Prefix of every Kafka topic name (lets several deployments or test runs share a cluster).',
  },
  KAFKA_PARTITIONS: {
    kind: 'integer',
    default: '12',
    minimum: 1,
    description: 'Partitions of each topic created by the service; the ceiling on consumers per group.',
  },
  KAFKA_REPLICATION_FACTOR: {
    kind: 'integer',
    default: '3',
    minimum: 1,
    description:
      'Replication factor of the topics the service creates. 3 for a cluster (docs/operations.md, "Production topology"); a single development broker needs 1 (with KAFKA_MIN_INSYNC_REPLICAS=1): a start that would create topics on fewer brokers than this fails and says so. Topics that already exist keep theirs.',
  },
  KAFKA_MIN_INSYNC_REPLICAS: {
    kind: 'integer',
    default: '2',
    minimum: 1,
    description:
      'min.insync.replicas of the topics the service creates: with acks=all, a write is accepted only once this many replicas have it, and refused (publish: 503 with Retry-After) while fewer are in sync. At most KAFKA_REPLICATION_FACTOR; 2 of 3 keeps every accepted event on two brokers and survives one broker down.',
  },
  KAFKA_MAX_MESSAGE_BYTES: {
    kind: 'integer',
    default: '4194304',
    minimum: 2097152,
    description:
      'max.message.bytes of the topics the service creates, and the most bytes one produce request carries (larger writes are split). Above the largest record: an event may be 1 MiB and a delivery record adds its destination. Topics that already exist keep their setting; raise theirs to match.',
  },
  DATABASE_URL: {
    kind: 'string',
    default: '',
    secret: true,
    format: 'postgres-url',
    description:
      'Postgres connection URL (postgres://user:password@host:port/database; a Unix socket: postgres://user@/database?host=/var/run/postgresql). Empty: npm start uses the embedded database (PGlite) under DATA_DIR; a service run on its own requires it.',
  },
  DATABASE_POOL_MAX: { kind: 'integer', default: '10', minimum: 1, description: 'Postgres connections per process.' },
  AES_ENCRYPTION_SECRET: {
    kind: 'string',
    required: true,
    secret: true,
    minLength: SECRET_MIN_LENGTH,
    description:
      'Key material for AES-256-GCM encryption of credentials and delivery_metadata at rest (for example: openssl rand -base64 32). To move off a shorter key, set it as AES_ENCRYPTION_SECRET_PREVIOUS and rotate (docs/operations.md).',
  },
  AES_ENCRYPTION_SECRET_PREVIOUS: {
    kind: 'string',
    default: '',
    secret: true,
    description: 'Previous encryption secret, still readable during a key rotation (any length, so a short old key can be rotated away).',
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    kind: 'string',
    default: '',
    format: 'http-url',
    description:
      'OpenTelemetry traces, off while empty: base URL of an OTLP/HTTP collector (spans are POSTed as JSON to <url>/v1/traces). One trace per event from publish through router, sender and attempt storage, carried in the W3C traceparent header of each Kafka (or embedded log) record. Off, no span is made and no header written.',
  },
  OTEL_SERVICE_NAME: {
    kind: 'string',
    default: '',
    description:
      'service.name of the spans (default switchyard-<service>, for example switchyard-router; switchyard-embedded in embedded mode).',
  },
  METRICS_PORT: {
    kind: 'integer',
    default: '9464',
    minimum: 0,
    maximum: 65535,
    description:
      'Port of the /metrics, /livez and /readyz listener of the router, sender and attempts service (the gateway serves them on API_PORT; embedded mode once, through the gateway). 0 picks a free port, logged at start.',
  },
  METRICS_HOST: {
    kind: 'string',
    default: '127.0.0.1',
    format: 'listen-host',
    description: 'Address the metrics and health listener binds (0.0.0.0 to let Prometheus and probes reach it).',
  },
  TOPICS: {
    kind: 'list',
    default: '*',
    description:
      'Comma-separated event topics that may be published and subscribed to; an entry may be a wildcard (user.*), and * allows any topic.',
  },
  WEBHOOK_HEADER_PREFIX: { kind: 'string', default: 'x-outpost-', description: 'Prefix of the metadata headers of webhook deliveries.' },
} as const satisfies Record<string, Setting>;
