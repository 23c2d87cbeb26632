import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createCipher } from '@switchyard/shared/crypto.ts';
import { openEmbeddedDb } from '@switchyard/shared/db/embedded.ts';
import { createDb, type Knex, migrateLatest } from '@switchyard/shared/db/index.ts';
import type { Bus, BusProducer } from '@switchyard/shared/bus/index.ts';
import { createEmbeddedBus } from '@switchyard/shared/embedded/bus.ts';
import { createKafkaBus } from '@switchyard/shared/kafka/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { Config } from '@switchyard/shared/config/index.ts';
import { createTestDatabase, testConfig } from '@switchyard/shared/testing/index.ts';
import { copyMigratedEmbeddedDb } from '@switchyard/shared/testing/embedded-template.ts';
import { build } from '../src/app.ts';

/** A service account key file as Google issues them (with a fresh key). */
export const SERVICE_ACCOUNT_JSON = JSON.stringify({
  type: 'service_account',
  project_id: 'my-project',
  private_key_id: '0123456789abcdef',
  private_key: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
  client_email: 'publisher@my-project.iam.gserviceaccount.com',
  client_id: '1234567890',
  token_uri: 'https://oauth2.googleapis.com/token',
});

interface T {
  teardown(fn: () => unknown): void;
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  db: Knex;
  /** The bus the gateway's producer belongs to (Kafka, or the embedded log when asked for), for a test to read its topics. */
  bus?: Bus;
  /** inject with the admin key unless another token is given. */
  call(
    method: string,
    url: string,
    body?: unknown,
    token?: string | null,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Record<string, unknown> }>;
}

/** A gateway over a fresh Postgres database and unique Kafka topics; `wrap` may watch its producer. */
export async function buildTestApp(
  t: T,
  overrides: Record<string, string> = {},
  wrap: (p: BusProducer) => BusProducer = (p) => p,
): Promise<TestApp> {
  const config = testConfig({ DATABASE_URL: await createTestDatabase(t), ...overrides });
  const logger = createLogger('gateway-test', 'silent');
  const db = createDb({ url: config.DATABASE_URL, poolMax: 4 });
  await migrateLatest(db);
  const bus = createKafkaBus({
    brokers: config.KAFKA_BROKERS,
    clientId: 'gateway-test',
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    partitions: 1,
    replicationFactor: 1,
    log: logger,
  });
  await bus.ensureTopics();
  const producer = wrap(await bus.producer());
  const app = await build(config, {
    db,
    producer,
    logger,
    cipher: createCipher(config.AES_ENCRYPTION_SECRET),
    readLag: bus.lag?.bind(bus),
  });
  t.teardown(async () => {
    await app.close();
    await bus.close();
    await db.destroy();
  });
  return { app, config, db, bus, call: caller(app, config) };
}

/**
 * A gateway over a fresh embedded database (PGlite, as embedded mode runs it; a copy of a migrated
 * one, testing/embedded-template.ts). With `log`, it publishes to an embedded log of its own (`bus`,
 * whose lag the admission bound reads); without, its producer refuses every send, for tests that
 * only read and manage.
 */
export async function buildEmbeddedTestApp(t: T, overrides: Record<string, string> = {}, opts: { log?: boolean } = {}): Promise<TestApp> {
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'gateway-pglite-'));
  const config = testConfig({ DATABASE_URL: '', ...(opts.log ? { KAFKA_BROKERS: '' } : {}), ...overrides });
  const logger = createLogger('gateway-test', 'silent');
  await copyMigratedEmbeddedDb(join(dir, 'pg'));
  const embedded = await openEmbeddedDb(join(dir, 'pg'));
  // A no-op on the copy, as at every start of embedded mode.
  await migrateLatest(embedded.db);
  const bus = opts.log
    ? await createEmbeddedBus({ dir: join(dir, 'log'), topicPrefix: config.KAFKA_TOPIC_PREFIX, partitions: 1, log: logger })
    : undefined;
  await bus?.ensureTopics();
  const refuse = async () => {
    throw new Error('buildEmbeddedTestApp: no log here');
  };
  const producer: BusProducer = bus ? await bus.producer() : { send: refuse, sendMany: refuse, close: async () => {} };
  const app = await build(config, {
    db: embedded.db,
    producer,
    logger,
    cipher: createCipher(config.AES_ENCRYPTION_SECRET),
    ...(bus?.lag ? { readLag: bus.lag.bind(bus) } : {}),
  });
  t.teardown(async () => {
    await app.close();
    await bus?.close();
    await embedded.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { app, config, db: embedded.db, ...(bus ? { bus } : {}), call: caller(app, config) };
}

function caller(app: FastifyInstance, config: Config): TestApp['call'] {
  return async (method, url, body, token = config.API_KEY, headers = {}) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: token === null ? headers : { ...headers, authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, body: res.body ? res.json() : undefined, headers: res.headers };
  };
}
