import { icon, type DestinationTypeDef } from './def.ts';

/**
 * The source id and signing key a gateway token holds (base64 of `source_id:signing_key`), or why it
 * holds none: read on save, so a token no delivery could use is refused, and by the sender.
 */
export function parseGatewayToken(token: unknown): { sourceId: string; signingKey: string } | string {
  if (typeof token !== 'string' || token === '') return 'the token is missing';
  const text = Buffer.from(token, 'base64').toString('utf8');
  const at = text.indexOf(':');
  if (!/^[A-Za-z0-9+/=_-]+$/.test(token) || at <= 0 || at === text.length - 1) {
    return 'the token is not base64 of source_id:signing_key';
  }
  return { sourceId: text.slice(0, at), signingKey: text.slice(at + 1) };
}

export const gateway: DestinationTypeDef = {
  type: 'gateway',
  label: 'Event Gateway',
  description: 'Forward events to a hosted event gateway connection.',
  icon: icon('<path d="M4 12h16M14 6l6 6-6 6"/>'),
  instructions: [
    '# Event Gateway',
    '',
    'Each event is POSTed to the gateway source the token names, with the event `data` as JSON body, the metadata as headers (prefixed like webhook headers) and an `X-Hookdeck-Signature: v0=<base64 HMAC-SHA256 of the body>` header signed with the source key.',
    '',
    '1. In the event gateway, create a source for Switchyard events (or open the setup page linked here) and copy its token: base64 of `source_id:signing_key`.',
    '2. Paste the token. The gateway needs no other permission: the token itself allows publishing to that one source.',
    '',
    'The deployment decides which gateway events go to (`EVENT_GATEWAY_BASE_URL`) and whether tokens are checked with it when saved (`EVENT_GATEWAY_VERIFY_URL`).',
  ].join('\n'),
  remote_setup_url: 'https://dashboard.hookdeck.com/connect',
  configOptional: true,
  config_fields: [],
  credential_fields: [
    { key: 'token', type: 'text', label: 'Token', description: 'Gateway source token.', required: true, sensitive: true },
  ],
  validate: (_config, credentials) => {
    const parsed = typeof credentials.token === 'string' ? parseGatewayToken(credentials.token) : null;
    return typeof parsed === 'string' ? [{ path: 'body.credentials.token', message: 'must be base64 of source_id:signing_key' }] : [];
  },
  target: () => 'Event Gateway',
};
