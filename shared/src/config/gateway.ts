import { SECRET_MIN_LENGTH, type Setting } from './setting.ts';

/**
 * Settings of the gateway (services/gateway): its HTTP API, the admin and tenant credentials, the
 * portal, and what publish and the destination routes accept.
 */
export const GATEWAY_SETTINGS = {
  API_PORT: { kind: 'integer', default: '3333', minimum: 0, maximum: 65535, description: 'HTTP port of the gateway.' },
  API_HOST: {
    kind: 'string',
    default: '127.0.0.1',
    format: 'listen-host',
    description: 'Address the gateway listens on (0.0.0.0 to expose it).',
  },
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
    default: 'auto',
    enum: ['auto', 'switchyard', 'outpost'],
    description:
      "Destination type names in answers. switchyard: Switchyard's own (sqs, kinesis, s3, servicebus, pubsub, gateway); outpost: the other service's (aws_sqs, aws_kinesis, aws_s3, azure_servicebus, gcp_pubsub, hookdeck), so its clients and SDKs read every answer; outpost also checks a pubsub service_account_json as it does (a JSON object with a type, endpoint or not). auto: outpost for requests from the other service's SDKs (their User-Agent names them), switchyard for every other client. Input accepts both names either way.",
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
  MAX_DESTINATIONS_PER_TENANT: { kind: 'integer', default: '20', minimum: 1, description: 'Destinations one tenant may own.' },
  PUBLISH_LINGER_MS: {
    kind: 'integer',
    default: '5',
    minimum: 0,
    maximum: 100,
    description:
      "Longest a gateway holds a published event, when no produce request is in flight, for others to share its request (Kafka's producers call it linger.ms): fewer, larger writes when many clients publish at a low rate, for up to this much more latency. Kept only while it pays: after a few holds that no other publish joined (a client publishing one event at a time, waiting for each answer) the gateway produces at once, and tries one hold at most every second until others join again. Kafka only: the embedded log's appends share one fdatasync already. 0: produce at once.",
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
      'Admission bound: while the delivery backlog (records the router and the senders have not committed, read once a second) is over this many records, publishing is refused with 429 RATE_LIMITED and Retry-After, and nothing is written. Only the types a sender runs for count (marked in sender presence within 90 s): deliveries of a type no sender runs wait for one and never refuse publishes. 0: off. Size it as the backlog the pipeline clears within the latency you accept (docs/operations.md).',
  },
  ROUTING_CACHE_TTL_MS: {
    kind: 'integer',
    default: '1000',
    minimum: 0,
    maximum: 60000,
    description:
      'How long a gateway trusts its in-memory view of a tenant changed through another gateway instance (bounds the staleness of destination_ids in publish answers).',
  },
  EVENT_GATEWAY_VERIFY_URL: {
    kind: 'string',
    default: '',
    format: 'http-url',
    description:
      'When set, the token of a gateway destination is verified on create and on change: GET this URL with the token as bearer credential ({source_id} in it is replaced); a 2xx answer accepts it, 401, 403 or 404 refuses it (422). Empty: tokens are not verified.',
  },
} as const satisfies Record<string, Setting>;
