import { icon, type DestinationTypeDef } from './def.ts';

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
  target: () => 'Event Gateway',
};
