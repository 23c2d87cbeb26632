/**
 * The OpenAPI document as the gateway serves it at /api/v1/openapi.json, built without any server:
 * the app is built over a database it never connects to (the document needs none). Run as a script
 * it prints the document (`node services/gateway/src/openapi-document.ts > openapi.json`); the
 * client package generates its types from it (packages/client).
 */
import { createCipher } from '@switchyard/shared/crypto.ts';
import { createDb } from '@switchyard/shared/db/index.ts';
import { loadConfig } from '@switchyard/shared/config/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import { build } from './app.ts';

/** The document of a deployment with these settings (API_BASE_URL, API_TYPE_NAMES) over the defaults. */
export async function openapiDocument(settings: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const config = loadConfig({
    ...settings,
    API_KEY: 'openapi-document',
    API_JWT_SECRET: 'openapi-document-jwt-secret-0123456789',
    AES_ENCRYPTION_SECRET: 'openapi-document-aes-secret-0123456789',
    DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
  });
  const db = createDb({ url: config.DATABASE_URL, poolMax: 1 });
  const refuse = async () => {
    throw new Error('openapiDocument: no Kafka here');
  };
  const logger = createLogger('openapi', 'silent');
  const app = await build(config, {
    db,
    logger,
    cipher: createCipher(config.AES_ENCRYPTION_SECRET),
    producer: { send: refuse, sendMany: refuse, close: async () => {} },
  });
  try {
    await app.ready();
    return (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
  } finally {
    await app.close();
    await db.destroy();
  }
}

if (import.meta.main) process.stdout.write(`${JSON.stringify(await openapiDocument(), null, 2)}\n`);
