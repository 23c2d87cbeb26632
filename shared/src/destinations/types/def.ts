import { compile } from '@jmespath-community/jmespath';
import type { Problem } from '../../errors.ts';
import type { DestinationType } from '../../model/index.ts';
import type { FieldDef } from '../fields.ts';

export interface DestinationTypeDef {
  type: DestinationType;
  label: string;
  description: string;
  /** SVG markup. */
  icon: string;
  /** Markdown shown beside the form. */
  instructions: string;
  remote_setup_url?: string;
  config_fields: readonly FieldDef[];
  credential_fields: readonly FieldDef[];
  /** config is optional on create for this type (gateway). */
  configOptional?: boolean;
  /** credentials may be omitted or null on create (webhook). */
  credentialsOptional?: boolean;
  /**
   * Checks beyond the fields' own (a value's inner shape), on create and on PATCH, after the fields
   * validated; paths as `body.config.<key>` / `body.credentials.<key>`.
   */
  validate?(config: Record<string, unknown>, credentials: Record<string, unknown>, rules?: ValidateRules): Problem[];
  /** Human-readable target of a destination, shown as `target`. */
  target(config: Record<string, unknown>): string;
  /** `target_url`, where a console for the target exists. */
  targetUrl?(config: Record<string, unknown>): string | undefined;
}

/**
 * A host for a client that splits `host:port` at its first `:` (kafkajs, the Pub/Sub client): a
 * name (`_` too, as container names have it) or an IPv4 address, never an IPv6 literal.
 */
export const HOST_NAME = '[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?';

export const icon = (path: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="24" height="24" fill="none" stroke="currentColor" stroke-width="1.5">${path}</svg>`;

/**
 * AWS keys and tokens travel in HTTP headers (and the secret signs them): printable ASCII without
 * spaces. A pasted line break would otherwise fail every delivery before it is sent.
 */
export function awsKeyProblems(credentials: Record<string, unknown>): Problem[] {
  return ['key', 'secret', 'session']
    .filter((k) => typeof credentials[k] === 'string' && credentials[k] !== '' && !/^[!-~]+$/.test(credentials[k] as string))
    .map((k) => ({ path: `body.credentials.${k}`, message: 'must be printable ASCII without spaces or line breaks' }));
}

export const awsKeyFields: FieldDef[] = [
  { key: 'key', type: 'text', label: 'Access key ID', description: 'AWS access key id.', required: true },
  { key: 'secret', type: 'text', label: 'Secret access key', description: 'AWS secret access key.', required: true, sensitive: true },
  {
    key: 'session',
    type: 'text',
    label: 'Session token',
    description: 'Optional session token for temporary credentials.',
    required: false,
    sensitive: true,
  },
];

/** How strictly `validate` reads a destination: the deployment's choice (API_TYPE_NAMES), not the input's. */
export interface ValidateRules {
  /**
   * Check values only as the other service (Outpost) does, for its clients' sake (API_TYPE_NAMES=outpost):
   * a Pub/Sub key need only be a JSON object with a `type`, endpoint or not.
   */
  peerCompatible?: boolean;
}

export const endpointField = (what: string): FieldDef => ({
  key: 'endpoint',
  type: 'text',
  label: 'Endpoint',
  description: `Custom ${what} endpoint URL (for local emulators or compatible services).`,
  required: false,
  pattern: 'https?://.+',
  format: 'address',
});

/** A setup step's IAM policy allowing `action` on `resource`: a JSON block indented under a list item. */
export const iamPolicy = (action: string, resource: string): string[] => [
  '   ```json',
  '   {',
  '     "Version": "2012-10-17",',
  '     "Statement": [{',
  '       "Effect": "Allow",',
  `       "Action": "${action}",`,
  `       "Resource": "${resource}"`,
  '     }]',
  '   }',
  '   ```',
];

export const regionField = (required: boolean): FieldDef => ({
  key: 'region',
  type: 'text',
  label: 'Region',
  description: 'Cloud region, for example us-east-1.',
  required,
  // A host name label, as the SDK and the S3 host take it.
  pattern: '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?',
});

/**
 * Template fields (a partition key, an object key): JMESPath expressions the sender compiles. One
 * that does not compile could never deliver an event, so it is refused when the destination is
 * saved (create and PATCH) rather than failing every delivery. Blank means the default, as senders read it.
 */
export function templateProblems(config: Record<string, unknown>, keys: readonly string[]): Problem[] {
  const problems: Problem[] = [];
  for (const key of keys) {
    const template = config[key];
    if (typeof template !== 'string' || template.trim() === '') continue;
    try {
      compile(template);
    } catch (err) {
      problems.push({ path: `body.config.${key}`, message: `is not a JMESPath expression: ${(err as Error).message}` });
    }
  }
  return problems;
}
