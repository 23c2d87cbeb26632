import { pino, type Logger } from 'pino';

export type { Logger };

/** Paths that may carry secrets anywhere in a log line; pino replaces their values. */
export const REDACT_PATHS = [
  'config.API_KEY',
  'config.API_JWT_SECRET',
  'config.AES_ENCRYPTION_SECRET',
  'config.AES_ENCRYPTION_SECRET_PREVIOUS',
  'config.DATABASE_URL',
  'req.headers.authorization',
  'headers.authorization',
  '*.credentials',
  'credentials',
  '*.delivery_metadata',
  'delivery_metadata',
  '*.secret',
  'secret',
  'token',
  '*.token',
];

/** A JSON logger for one service. One wide line per publish and per attempt is the convention. */
export function createLogger(service: string, level: string = 'info'): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    formatters: { level: (label) => ({ level: label }) },
  });
}
