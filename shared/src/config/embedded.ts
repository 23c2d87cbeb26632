import type { Setting } from './setting.ts';

/**
 * Settings of embedded mode only (services/embedded, npm start): where its log, database and
 * generated secrets live. A service run on its own never reads them.
 */
export const EMBEDDED_SETTINGS = {
  DATA_DIR: {
    kind: 'string',
    default: './data',
    description:
      'Directory of the embedded mode: its log (when KAFKA_BROKERS is empty), its database (when DATABASE_URL is empty) and generated secrets.',
  },
} as const satisfies Record<string, Setting>;
