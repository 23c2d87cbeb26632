import { createPrivateKey } from 'node:crypto';
import type { Problem } from '../../errors.ts';
import { HOST_NAME, icon, type DestinationTypeDef } from './def.ts';

/**
 * A Pub/Sub endpoint: `host:port` as emulators are given (PUBSUB_EMULATOR_HOST), or an http(s) URL
 * whose port is optional (the client splits the endpoint at its first `:`).
 */
export const PUBSUB_ENDPOINT = `${HOST_NAME}:\\d{1,5}|https?://${HOST_NAME}(?::\\d{1,5})?/?`;

/**
 * Whether an endpoint is reached without TLS (and so without credentials, as the client does for
 * Google's emulator): any set endpoint but an `https://` one. No endpoint is Google, with TLS.
 */
export function reachedWithoutTls(endpoint: unknown): boolean {
  return typeof endpoint === 'string' && endpoint !== '' && !endpoint.startsWith('https://');
}

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
      : 'must carry a "type" (with an endpoint without TLS, a placeholder key such as {"type":"service_account"} will do)';
  if (k.type !== 'service_account') return 'must be a service account key: its "type" must be "service_account"';
  if (typeof k.client_email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(k.client_email))
    return 'must carry the service account\'s "client_email"';
  if (typeof k.private_key !== 'string') return 'must carry the service account\'s "private_key"';
  try {
    // Google signs a service account's token requests with RS256: an RSA key.
    if (createPrivateKey(k.private_key).asymmetricKeyType !== 'rsa') return 'has a "private_key" that is not an RSA key';
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
    '3. Create a JSON key for the service account (IAM > Service accounts > Keys > Add key > JSON) and paste the whole file into **Service account key**. It is checked on save: it must be a service account key with `client_email` and `private_key` (with an **Endpoint** reached without TLS, an emulator, any JSON object with a `type` will do, such as `{"type":"service_account"}`).',
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
    {
      key: 'topic',
      type: 'text',
      label: 'Topic',
      description: 'Pub/Sub topic id.',
      required: true,
      // Google's rule for resource ids (a goog prefix is refused in validate).
      pattern: '[A-Za-z][A-Za-z0-9._~+%-]{2,254}',
    },
    {
      key: 'endpoint',
      type: 'text',
      label: 'Endpoint',
      description: 'For an emulator or a private endpoint: host:port (as PUBSUB_EMULATOR_HOST), or an http(s) URL. Empty for Google.',
      required: false,
      pattern: PUBSUB_ENDPOINT,
      format: 'address',
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
    // The placeholder-key check with an endpoint reached without TLS (an emulator: no credentials are
    // sent), or always when answering as the peer does; with TLS the key signs every call.
    const lenient = rules?.peerCompatible === true || reachedWithoutTls(config.endpoint);
    const problem = checkServiceAccountJson(credentials.service_account_json, lenient);
    return [
      ...(problem ? [{ path: 'body.credentials.service_account_json', message: problem } satisfies Problem] : []),
      ...(typeof config.topic === 'string' && /^goog/i.test(config.topic)
        ? [{ path: 'body.config.topic', message: 'must not start with goog (Google reserves it)' } satisfies Problem]
        : []),
    ];
  },
  target: (c) => `projects/${String(c.project_id ?? '')}/topics/${String(c.topic ?? '')}`,
};
