/**
 * What one entry of the configuration catalogue says about a setting. Each entry is data, so the
 * same list validates at boot (load.ts), documents .env.example (infra/env-example.ts) and the README.
 */
export type Kind = 'string' | 'integer' | 'boolean' | 'list' | 'integer-list';

export interface Setting {
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
   * found by a connection that fails later: an absolute http(s) URL, a postgres:// URL, an address
   * or host name to listen on, or (each entry of a list) a Kafka broker host:port or a browser origin.
   */
  format?: 'http-url' | 'postgres-url' | 'listen-host' | 'host-port' | 'origin';
}

/** Fewest characters of AES_ENCRYPTION_SECRET and API_JWT_SECRET (32: 24 random bytes in base64). */
export const SECRET_MIN_LENGTH = 32;
