import { randomBytes } from 'node:crypto';
import type { Problem } from '../../errors.ts';
import { isRealDateTime } from '../../time.ts';
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
      format: 'address',
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
      description: 'When the previous secret stops signing (an RFC 3339 date-time, for example 2030-01-01T00:00:00Z).',
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
  // An expiry the sender cannot read would end double signing at once.
  validate: (config, credentials) => {
    const problems: Problem[] = [];
    // The sender posts to the URL's origin and path: credentials in it would never be sent.
    if (typeof config.url === 'string' && URL.canParse(config.url)) {
      const u = new URL(config.url);
      if (u.username || u.password)
        problems.push({
          path: 'body.config.url',
          message: 'must not carry user:password@ (it is not sent): put an Authorization header in custom_headers',
        });
    }
    const invalidAt = credentials.previous_secret_invalid_at;
    if (typeof invalidAt === 'string' && invalidAt !== '' && !isInstant(invalidAt)) {
      problems.push({
        path: 'body.credentials.previous_secret_invalid_at',
        message: 'must be an RFC 3339 date-time, for example 2030-01-01T00:00:00Z',
      });
    }
    return problems;
  },
  target: (c) => String(c.url ?? ''),
  targetUrl: (c) => (typeof c.url === 'string' ? c.url : undefined),
};

// RFC 3339's date-time (T and Z in either case, an offset always); no leap second: Date.parse has none.
const RFC_3339 =
  /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/i;

/** Whether `s` is an RFC 3339 date-time of an instant that exists, read as the sender reads it (Date.parse). */
function isInstant(s: string): boolean {
  const m = RFC_3339.exec(s);
  return m !== null && Number.isFinite(Date.parse(s)) && isRealDateTime(Number(m[1]), Number(m[2]), Number(m[3]));
}

/** A new signing secret in the Standard Webhooks form: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
