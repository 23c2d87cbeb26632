import { randomBytes } from 'node:crypto';
import { icon, type DestinationTypeDef } from './def.ts';

export const webhook: DestinationTypeDef = {
  type: 'webhook',
  label: 'Webhook',
  description: 'Send events as signed HTTP POST requests to a URL.',
  icon: icon('<path d="M8 16a4 4 0 1 1 3-6.6M16 16H9.5M14 8l3 6.5M16 16a4 4 0 1 1-1 3"/>'),
  instructions:
    '# Webhook\n\nEvents arrive as `POST` requests with a JSON body (the event `data`).\n\nVerify each request with the signing secret shown on the destination; see the signature documentation for the header format.',
  credentialsOptional: true,
  config_fields: [
    {
      key: 'url',
      type: 'text',
      label: 'URL',
      description: 'The http or https URL that receives the events.',
      required: true,
      maxlength: 2048,
      pattern: 'https?://[^\\s/$.?#][^\\s]*',
    },
    {
      key: 'custom_headers',
      type: 'key_value_map',
      label: 'Custom headers',
      description: 'Extra HTTP headers sent with every delivery.',
      required: false,
    },
  ],
  credential_fields: [
    {
      key: 'secret',
      type: 'text',
      label: 'Secret',
      description: 'Signing secret; generated when omitted.',
      required: false,
      adminOnly: true,
    },
    {
      key: 'previous_secret',
      type: 'text',
      label: 'Previous secret',
      description: 'The rotated-out secret, still signing until previous_secret_invalid_at.',
      required: false,
      adminOnly: true,
    },
    {
      key: 'previous_secret_invalid_at',
      type: 'text',
      label: 'Previous secret invalid at',
      description: 'When the previous secret stops signing (ISO 8601).',
      required: false,
      adminOnly: true,
    },
    {
      key: 'rotate_secret',
      type: 'checkbox',
      label: 'Rotate secret',
      description: 'Set to true to rotate the secret.',
      required: false,
      writeOnly: true,
    },
  ],
  target: (c) => String(c.url ?? ''),
  targetUrl: (c) => (typeof c.url === 'string' ? c.url : undefined),
};

/** A new signing secret in the Standard Webhooks form: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
