import { Ajv, type ErrorObject } from 'ajv';
import { DESTINATION_TYPES } from '../model/index.ts';

/**
 * The configuration catalogue: every environment setting the project reads, in one place.
 * Nothing else in the code spells an environment variable name. Each entry is data, so the
 * same list validates at boot, documents .env.example (a test keeps them equal) and the README.
 */
type Kind = 'string' | 'integer' | 'boolean' | 'list' | 'integer-list';

interface Setting {
  kind: Kind;
  description: string;
  default?: string;
  /** Required settings have no default and must be present. */
  required?: boolean;
  minimum?: number;
  maximum?: number;
  /** The values allowed (each entry's, for a list). */
  enum?: readonly string[];
  /** Never printed (logs, errors, start-up banners). */
  secret?: boolean;
  /** Fewest characters of a non-empty value (secrets too short to be safe are refused). */
  minLength?: number;
  /**
   * Syntax a non-empty value must have, checked at load so a typo is refused at once rather than
   * found by a connection that fails later: an absolute http(s) URL, a postgres:// URL, or (each
   * entry of a list) a Kafka broker host:port or a browser origin.
   */
  format?: 'http-url' | 'postgres-url' | 'host-port' | 'origin';
}

/** Fewest characters of AES_ENCRYPTION_SECRET and API_JWT_SECRET (32: 24 random bytes in base64). */
export const SECRET_MIN_LENGTH = 32;

export const SETTINGS = {
  API_PORT: { kind: 'integer', default: '3333', minimum: 0, maximum: 65535, description: 'HTTP port of the gateway.' },
  API_HOST: { kind: 'string', default: '127.0.0.1', description: 'Address the gateway listens on (0.0.0.0 to expose it).' },
  API_KEY: { kind: 'string', required: true, secret: true, description: 'Admin credential, sent as Authorization: Bearer <API_KEY>.' },
  API_JWT_SECRET: {
    kind: 'string',
    required: true,
    secret: true,
    minLength: SECRET_MIN_LENGTH,
    description: 'HS256 key that signs tenant tokens (for example: openssl rand -base64 32).',
  },
  API_MAX_INFLIGHT_BYTES: {
    kind: 'integer',
    default: '33554432',
    minimum: 1024,
    description:
      'Bytes of request bodies a gateway holds at once, counted as they arrive; past it, requests get 503 SERVICE_UNAVAILABLE with Retry-After and change nothing. A tenant token holds at most a quarter of it (at least one 16 MiB body). Bounds the memory a burst of large publishes takes (32 MiB: two full batch publishes).',
  },
  API_BODY_TIMEOUT_MS: {
    kind: 'integer',
    default: '30000',
    minimum: 100,
    description:
      'How long a request body may take to arrive, from the request headers; a slower one is answered 408 REQUEST_TIMEOUT and its connection closed, so slow clients cannot hold the body budget.',
  },
  API_PAGE_MAX_BYTES: {
    kind: 'integer',
    default: '8388608',
    minimum: 1024,
    maximum: 268435456,
    description:
      'Payload bytes (event data and metadata as JSON) one listing page carries. A listing that returns event data (events; attempts with include=event.data) stops adding items once those on the page reach it (attempts with include=event: once their metadata reaches it), so such a page may hold fewer than limit items: follow next. One item always comes back, however large. Bounds the payload a listing holds to this plus one event, whatever its limit (8 MiB: 1000 events of 8 KiB, or 8 of 1 MiB); at most 256 MiB, as a page is answered as one string.',
  },
  API_BASE_URL: {
    kind: 'string',
    default: '',
    format: 'http-url',
    description: 'Public base URL of the gateway, used in portal redirect URLs (default http://API_HOST:API_PORT).',
  },
  API_TYPE_NAMES: {
    kind: 'string',
    default: 'switchyard',
    enum: ['switchyard', 'outpost'],
    description:
      "Destination type names in answers. switchyard: interface.md's (sqs, kinesis, s3, servicebus, pubsub, gateway); outpost: the other service's (aws_sqs, aws_kinesis, aws_s3, azure_servicebus, gcp_pubsub, hookdeck), so its clients and SDKs read every answer; outpost also checks a pubsub service_account_json as it does (a JSON object with a type, endpoint or not). Input accepts both names either way.",
  },
  CORS_ALLOWED_ORIGINS: {
    kind: 'list',
    default: '',
    format: 'origin',
    description:
      'Origins (scheme://host[:port], comma separated) whose pages may call the API from a browser, with a tenant token (CORS); * allows any origin. Empty: none but the gateway itself (the portal is served from the same origin and needs no entry).',
  },
  PORTAL_REFERER_URL: {
    kind: 'string',
    default: '',
    format: 'http-url',
    description:
      "Where the portal sends a user whose token has expired or is invalid (your product's page that opens the portal); empty: the portal says so and offers no link.",
  },
  PORTAL_ORGANIZATION_NAME: { kind: 'string', default: '', description: 'Organisation name shown in the portal header and page title.' },
  PORTAL_BRAND_COLOR: {
    kind: 'string',
    default: '',
    description: 'Brand colour of the portal (a CSS colour such as #6d28d9): buttons, links, focus rings. Empty: the default blue.',
  },
  PORTAL_LOGO: { kind: 'string', default: '', description: 'URL of the logo shown in the portal header (light theme).' },
  PORTAL_LOGO_DARK: { kind: 'string', default: '', description: 'URL of the logo for the dark theme; empty: PORTAL_LOGO.' },
  PORTAL_FAVICON_URL: { kind: 'string', default: '', description: 'URL of the favicon of the portal pages.' },
  PORTAL_FORCE_THEME: {
    kind: 'string',
    default: '',
    enum: ['', 'light', 'dark'],
    description:
      "Forces the portal's theme (light or dark) whatever the theme query parameter or the browser asks; empty: the theme query parameter, else the browser's preference, and a toggle.",
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
    description: 'Address the metrics and health listener binds (0.0.0.0 to let Prometheus and probes reach it).',
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
  TOPICS: {
    kind: 'list',
    default: '*',
    description:
      'Comma-separated event topics that may be published and subscribed to; an entry may be a wildcard (user.*), and * allows any topic.',
  },
  MAX_DESTINATIONS_PER_TENANT: { kind: 'integer', default: '20', minimum: 1, description: 'Destinations one tenant may own.' },
  DELIVERY_TIMEOUT_SECONDS: {
    kind: 'integer',
    default: '5',
    minimum: 1,
    maximum: 300,
    description: 'Upper bound of one delivery attempt.',
  },
  RETRY_SCHEDULE: {
    kind: 'integer-list',
    default: '',
    description:
      'Comma-separated delays in seconds between retries (the n-th entry before the n-th retry); replaces RETRY_INTERVAL_SECONDS. Retries: as many as it has entries, at most RETRY_MAX_LIMIT.',
  },
  RETRY_INTERVAL_SECONDS: {
    kind: 'integer',
    default: '30',
    minimum: 1,
    description: 'First retry delay; doubles each retry when RETRY_SCHEDULE is empty.',
  },
  RETRY_MAX_LIMIT: {
    kind: 'integer',
    default: '10',
    minimum: 0,
    description: 'Most retries after the first attempt, with or without RETRY_SCHEDULE (0: none).',
  },
  ALERT_CONSECUTIVE_FAILURE_COUNT: {
    kind: 'integer',
    default: '20',
    minimum: 1,
    description: 'Consecutive failed attempts of a destination that raise an operator event.',
  },
  ALERT_AUTO_DISABLE_DESTINATION: {
    kind: 'boolean',
    default: 'false',
    description: 'Disable a destination when it reaches ALERT_CONSECUTIVE_FAILURE_COUNT.',
  },
  OPERATOR_CALLBACK_URL: {
    kind: 'string',
    default: '',
    format: 'http-url',
    description: 'Optional URL that receives operator events as signed HTTP POSTs (they always go to the operator-events topic).',
  },
  OPERATOR_CALLBACK_SECRET: {
    kind: 'string',
    default: '',
    secret: true,
    description: 'HMAC key signing operator callbacks (Standard Webhooks headers).',
  },
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
  DATA_DIR: {
    kind: 'string',
    default: './data',
    description:
      'Directory of the embedded mode: its log (when KAFKA_BROKERS is empty), its database (when DATABASE_URL is empty) and generated secrets.',
  },
  DATABASE_POOL_MAX: { kind: 'integer', default: '10', minimum: 1, description: 'Postgres connections per process.' },
  RETENTION_DAYS: {
    kind: 'integer',
    default: '30',
    minimum: 0,
    description:
      'Days events, deliveries, attempts, their counts and operator events are kept: older time partitions are dropped whole, older count rows deleted (0 keeps everything; docs/queries.md).',
  },
  PARTITION_INTERVAL_DAYS: {
    kind: 'integer',
    default: '1',
    minimum: 1,
    maximum: 31,
    description: 'Days per time partition of events, deliveries and attempts, which is also the granularity of retention.',
  },
  PARTITION_AHEAD_DAYS: { kind: 'integer', default: '7', minimum: 1, description: 'Time partitions are created this many days ahead.' },
  WEBHOOK_HEADER_PREFIX: { kind: 'string', default: 'x-outpost-', description: 'Prefix of the metadata headers of webhook deliveries.' },
  PUBLISH_LINGER_MS: {
    kind: 'integer',
    default: '0',
    minimum: 0,
    maximum: 100,
    description:
      "Longest a gateway holds a published event, when no produce request is in flight, for others to share its request (Kafka's producers call it linger.ms): fewer, larger writes when many clients publish at a low rate, but every lone publish is answered this much later, so a client that publishes one event at a time slows down. 0: produce at once.",
  },
  PUBLISH_TIMEOUT_MS: {
    kind: 'integer',
    default: '10000',
    minimum: 100,
    maximum: 120000,
    description:
      'Longest a publish takes before it is answered, from its body received: 202 once its event is written to Kafka, else 503 SERVICE_UNAVAILABLE with Retry-After (the broker is away or too slow). An event still queued at the limit is never written; one whose write was in flight may still be, so the 503 says so (a retry with the same id is then answered as a duplicate).',
  },
  PUBLISH_MAX_BACKLOG: {
    kind: 'integer',
    default: '0',
    minimum: 0,
    description:
      'Admission bound: while the delivery backlog (records the router and the senders have not committed, read once a second) is over this many records, publishing is refused with 429 RATE_LIMITED and Retry-After, and nothing is written. 0: off. Size it as the backlog the pipeline clears within the latency you accept (docs/operations.md).',
  },
  ROUTING_CACHE_TTL_MS: {
    kind: 'integer',
    default: '1000',
    minimum: 0,
    maximum: 60000,
    description:
      'How long a gateway trusts its in-memory view of a tenant changed through another gateway instance (bounds the staleness of destination_ids in publish answers).',
  },
  WEBHOOK_SIGNATURE_MODE: {
    kind: 'string',
    default: 'standard',
    enum: ['standard', 'compatible'],
    description: 'standard: Standard Webhooks v1 (webhook-signature); compatible: x-outpost-signature v0=<hex>.',
  },
  WEBHOOK_RESPONSE_MAX_BYTES: {
    kind: 'integer',
    default: '8192',
    minimum: 0,
    description: 'Bytes of a destination response body kept in an attempt.',
  },
  EGRESS_ALLOW: {
    kind: 'list',
    default: '',
    description: 'CIDRs or hosts deliveries may reach although not public (loopback, private ranges); empty allows public addresses only.',
  },
  SENDER_CONCURRENCY: {
    kind: 'integer',
    default: '64',
    minimum: 1,
    maximum: 10000,
    description:
      'Deliveries in flight at once per partition in a sender. Keep it well above the number of destinations of one partition that may hang at once: each holds a slot until its timeout.',
  },
  SENDER_MAX_INFLIGHT_BYTES: {
    kind: 'integer',
    default: '16777216',
    minimum: 1024,
    description:
      'Bytes of delivery records (as stored in the delivery topic) a sender has in flight at once, across its partitions; one delivery always fits. Bounds the memory a sender holds whatever the size of events (16 MiB: 64 deliveries of 256 KiB events).',
  },
  DESTINATION_CONCURRENCY: {
    kind: 'integer',
    default: '8',
    minimum: 1,
    maximum: 1000,
    description:
      'Deliveries in flight at once to one destination (per sender partition), so a slow destination cannot take every slot. A delivery holds its slot until the destination answers (or the timeout), not while its attempt is written. For the batched types (sqs, kinesis) it counts requests: up to this many full batches of deliveries, within SENDER_CONCURRENCY less this many.',
  },
  ROUTER_BATCH_WAIT_MS: {
    kind: 'integer',
    default: '3',
    minimum: 0,
    maximum: 1000,
    description:
      'Longest the router lets a fetch of published events fill before routing it (its fetch wait): at low and middling load fewer, larger batches, so fewer database round trips and produce requests downstream, for up to this much more publish-to-delivery latency; publishers never wait for it. 0: route what each fetch brings.',
  },
  ROUTER_FETCH_MAX_BYTES: {
    kind: 'integer',
    default: '2097152',
    minimum: 65536,
    maximum: 104857600,
    description:
      'Bytes one fetch of published events may bring back to a router, all of it from one partition if only one has events (kafkajs would take 10 MiB a fetch, 1 MiB a partition). Behind, a router holds one fetch of events and every delivery record they expand to at once.',
  },
  ATTEMPTS_BATCH_WAIT_MS: {
    kind: 'integer',
    default: '200',
    minimum: 0,
    maximum: 5000,
    description:
      'Longest the attempts service lets a batch of attempts or routed events fill before writing it (its fetch wait): fewer, larger writes at low load; listings trail deliveries by at most this much more. 0: write what each fetch brings.',
  },
  ATTEMPTS_FETCH_MAX_BYTES: {
    kind: 'integer',
    default: '2097152',
    minimum: 65536,
    maximum: 104857600,
    description:
      'Bytes one fetch of the attempts service may bring back, all of it from one partition if only one has records (kafkajs would take 10 MiB a fetch, 1 MiB a partition). Behind, each of its two consumers holds about one fetch of records at once: in the benchmark 2 MiB kept it at 139-152 MB catching up at 13,000-14,000 attempts/s, 10 MiB caught up a fifth faster at 235 MB.',
  },
  DESTINATION_STALL_MS: {
    kind: 'integer',
    default: '1000',
    minimum: 1,
    maximum: 3600000,
    description:
      'A destination is stalled while its oldest delivery in flight has run this long, or after a delivery ran into the delivery timeout (it then gets one slot until a delivery finishes in time). Deliveries of a stalled destination that would wait for a slot are parked instead, so it cannot fill the partition; a destination that keeps up is never parked.',
  },
  DESTINATION_BACKLOG: {
    kind: 'integer',
    default: '0',
    minimum: 0,
    maximum: 100000,
    description: 'Deliveries of a stalled destination allowed to wait for a slot per sender partition before the rest are parked.',
  },
  RETRY_AFTER_MAX_SECONDS: {
    kind: 'integer',
    default: '3600',
    minimum: 0,
    description: 'Longest wait a destination may ask for with Retry-After.',
  },
  EVENT_GATEWAY_BASE_URL: {
    kind: 'string',
    default: 'https://hkdk.events',
    format: 'http-url',
    description:
      'Base URL of the event gateway that gateway destinations deliver to: each event is POSTed to <base>/<source id>. Point it at a self-hosted gateway or a local receiver.',
  },
  EVENT_GATEWAY_VERIFY_URL: {
    kind: 'string',
    default: '',
    format: 'http-url',
    description:
      'When set, the token of a gateway destination is verified on create and on change: GET this URL with the token as bearer credential ({source_id} in it is replaced); a 2xx answer accepts it, 401, 403 or 404 refuses it (422). Empty: tokens are not verified.',
  },
  KINESIS_METADATA_IN_PAYLOAD: {
    kind: 'boolean',
    default: 'true',
    description:
      'Kinesis records are {"metadata": {...}, "data": <event data>} (true) or the event data alone (false: Kinesis records have no attributes, so the metadata is not sent).',
  },
  SENDER_TYPES: {
    kind: 'list',
    default: 'webhook,sqs,rabbitmq,gateway,kinesis,servicebus,s3,pubsub,kafka',
    enum: DESTINATION_TYPES,
    description:
      'Destination types this sender process consumes (comma separated); the default is every type. Split them over sender processes to scale or isolate types; a type no sender consumes waits in its deliveries topic.',
  },
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;
type ValueOf<S extends Setting> = S['kind'] extends 'integer'
  ? number
  : S['kind'] extends 'boolean'
    ? boolean
    : S['kind'] extends 'list'
      ? readonly string[]
      : S['kind'] extends 'integer-list'
        ? readonly number[]
        : string;
export type Config = { readonly [K in SettingName]: ValueOf<(typeof SETTINGS)[K]> };

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  readonly retryable = false;
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    // One line, whatever the number of problems: it is what a failed start prints (shared/src/process.ts).
    super(`invalid configuration: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

const ajv = new Ajv({ allErrors: true, coerceTypes: false });

function toValue(name: string, s: Setting, raw: string, problems: string[]): unknown {
  const split = (v: string) =>
    v
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== '');
  switch (s.kind) {
    case 'integer':
      return /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw;
    case 'boolean': {
      const v = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(v)) return true;
      if (['false', '0', 'no', 'off', ''].includes(v)) return false;
      return raw;
    }
    case 'list':
      return split(raw);
    case 'integer-list':
      return split(raw).map((x) => {
        if (!/^\d+$/.test(x)) problems.push(`${name}: "${x}" is not a whole number of seconds`);
        return Number(x);
      });
    default:
      return raw;
  }
}

function jsonSchemaOf(s: Setting): object {
  switch (s.kind) {
    case 'integer':
      return { type: 'integer', minimum: s.minimum, maximum: s.maximum };
    case 'boolean':
      return { type: 'boolean' };
    case 'list':
      return { type: 'array', items: s.enum ? { type: 'string', enum: s.enum } : { type: 'string' } };
    case 'integer-list':
      return { type: 'array', items: { type: 'integer', minimum: 0 } };
    default:
      return s.enum ? { type: 'string', enum: s.enum } : { type: 'string', minLength: s.required ? 1 : 0 };
  }
}

const schemaOf = (names: readonly string[]) => ({
  type: 'object',
  properties: Object.fromEntries(names.map((k) => [k, jsonSchemaOf((SETTINGS as Record<string, Setting>)[k] as Setting)])),
  required: names.filter((k) => (SETTINGS as Record<string, Setting>)[k]?.required),
});
const validateAll = ajv.compile(schemaOf(Object.keys(SETTINGS)));

function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

function isPostgresUrl(v: string): boolean {
  const m = /^postgres(ql)?:\/\/([^@/?#]*@)?/.exec(v);
  if (!m) return false;
  // An empty host (a Unix socket named by ?host=) is valid for node-postgres though not for URL.
  const rest = v.slice(m[0].length);
  try {
    new URL(`postgres://${m[2] ?? ''}${/^[/?#]|^$/.test(rest) ? 'localhost' : ''}${rest}`);
    return true;
  } catch {
    return false;
  }
}

function isOrigin(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === v;
  } catch {
    return false;
  }
}

/** host:port, the host a name, an IPv4 address or a bracketed IPv6 address, the port 1-65535. */
export function isHostPort(v: string): boolean {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/.exec(v);
  return m !== null && Number(m[3]) >= 1 && Number(m[3]) <= 65535;
}

/** The problems of the values that have the type their schema asks for: syntax and length. */
function checkValues(name: string, s: Setting, value: unknown, problems: string[]): void {
  if (typeof value === 'string' && value !== '') {
    if (s.minLength !== undefined && value.length < s.minLength) {
      problems.push(`${name}: must be at least ${s.minLength} characters (for example: openssl rand -base64 32)`);
    }
    if (s.format === 'http-url' && !isHttpUrl(value)) problems.push(`${name}: must be an absolute http:// or https:// URL`);
    if (s.format === 'postgres-url' && !isPostgresUrl(value)) {
      problems.push(`${name}: must be a postgres:// (or postgresql://) URL, such as postgres://user:password@host:5432/database`);
    }
  }
  if (s.format === 'host-port' && Array.isArray(value)) {
    // Broker addresses are not secret: the entry is named so it can be found.
    for (const entry of value as string[]) {
      if (!isHostPort(entry)) problems.push(`${name}: "${entry}" is not host:port (a port from 1 to 65535)`);
    }
  }
  if (s.format === 'origin' && Array.isArray(value)) {
    // A browser sends its origin exactly so (no path, no trailing slash): anything else never matches.
    for (const entry of value as string[]) {
      if (entry !== '*' && !isOrigin(entry)) problems.push(`${name}: "${entry}" is not an origin (scheme://host[:port], or *)`);
    }
  }
}

/**
 * Reads, validates and freezes the configuration. Reports every problem at once. With `names`, reads
 * only those settings (a command that needs a few, such as npm run migrate, needs nothing else set).
 */
export function loadConfig(env?: Record<string, string | undefined>): Config;
export function loadConfig<K extends SettingName>(env: Record<string, string | undefined>, names: readonly K[]): Pick<Config, K>;
export function loadConfig(env: Record<string, string | undefined> = process.env, names?: readonly SettingName[]): Partial<Config> {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  const entries = (Object.entries(SETTINGS) as [string, Setting][]).filter(([name]) => !names || names.includes(name as SettingName));
  for (const [name, s] of entries) {
    const raw = env[name] ?? s.default;
    if (raw === undefined) continue;
    values[name] = toValue(name, s, raw, problems);
  }
  const validate = names ? ajv.compile(schemaOf(names)) : validateAll;
  if (!validate(values)) {
    for (const e of validate.errors as ErrorObject[]) {
      const name = e.instancePath.split('/')[1] ?? (e.params as { missingProperty?: string }).missingProperty ?? '';
      // Values are never echoed: some settings are secrets. The allowed ones come from the catalogue.
      const message =
        e.keyword === 'required'
          ? 'is required'
          : e.keyword === 'enum'
            ? `must be one of ${(e.params as { allowedValues: string[] }).allowedValues.join(', ')}`
            : e.message;
      problems.push(`${name}: ${message}`);
    }
  }
  for (const [name, s] of entries) checkValues(name, s, values[name], problems);
  if (problems.length) throw new ConfigError([...new Set(problems)]);
  return Object.freeze(values) as Partial<Config>;
}

/** A printable copy of the configuration with secrets masked. */
export function describeConfig(config: Config): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, (SETTINGS as Record<string, Setting>)[k]?.secret ? '********' : v]));
}
