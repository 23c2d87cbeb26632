import { join, resolve } from 'node:path';
import { type Config, ConfigError, loadServiceConfig } from './config/index.ts';
import { type Cipher, createCipher } from './crypto.ts';
import { createDb, type Knex, migrateLatest } from './db/index.ts';
import { checkStoredKey } from './db/stores/destinations.ts';
import { lockDirectory } from './embedded/lock.ts';
import type { Bus } from './bus/index.ts';
import { createLogger, type Logger } from './log.ts';
import { DependencyError } from './process.ts';
import { instrumentBus, trackDb, untrackDb } from './metrics.ts';
import type { Tracing } from './tracing.ts';

/** The concrete dependencies of one service process. The only place that chooses implementations. */
export interface Runtime {
  config: Config;
  logger: Logger;
  db: Knex;
  bus: Bus;
  cipher: Cipher;
  /** OpenTelemetry traces (shared/src/tracing.ts); null when off (OTEL_EXPORTER_OTLP_ENDPOINT empty). */
  tracing: Tracing | null;
  /** Which implementations were chosen (see `embeddedParts`). */
  mode: { log: 'kafka' | 'embedded'; db: 'postgres' | 'embedded' };
  close(): Promise<void>;
}

/**
 * A started service: its handlers are wired to a runtime it does not own. `close` stops taking
 * work and lets in-flight work finish (its consumers commit); the owner closes the runtime after.
 * Each services/<name>/src/service.ts exports `start(rt): Promise<Service>`: main.ts runs one in
 * its own process, services/embedded runs them all on one runtime.
 */
export interface Service {
  close(): Promise<void>;
}

export interface RuntimeOptions {
  /**
   * Set only by the single-process composition root (services/embedded): it may then use the
   * embedded log and database. A service process run on its own must be given KAFKA_BROKERS and
   * DATABASE_URL, since the embedded log and database belong to one process.
   */
  embedded?: boolean;
}

/**
 * The mode rule: an empty KAFKA_BROKERS selects the embedded log (DATA_DIR/log), an empty
 * DATABASE_URL the embedded database (DATA_DIR/pg); each is decided on its own.
 */
export function embeddedParts(config: Config): { log: boolean; db: boolean } {
  return { log: config.KAFKA_BROKERS.length === 0, db: config.DATABASE_URL === '' };
}

/** By default the configuration of `service` alone: the settings of its sections (shared/src/config). */
export async function createRuntime(
  service: string,
  config: Config = loadServiceConfig(service),
  options: RuntimeOptions = {},
): Promise<Runtime> {
  const logger = createLogger(service, config.LOG_LEVEL);
  const embedded = embeddedParts(config);
  if ((embedded.log || embedded.db) && !options.embedded) {
    throw new ConfigError([
      ...(embedded.log
        ? ['KAFKA_BROKERS: is required to run a service on its own (npm start runs every service in one process without it)']
        : []),
      ...(embedded.db
        ? ['DATABASE_URL: is required to run a service on its own (npm start runs every service in one process without it)']
        : []),
    ]);
  }
  // DATA_DIR is embedded mode's setting: read only when a part is embedded (never by a service on its own).
  const dataDir = embedded.log || embedded.db ? resolve(config.DATA_DIR) : '';
  // One process per data directory: the log and PGlite both assume they are alone.
  const lock = dataDir ? lockDirectory(dataDir) : null;
  const cleanup: Array<() => Promise<void>> = [async () => lock?.release()];
  const undo = async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn().catch(() => undefined);
  };
  try {
    // Loaded only when on: a process without tracing never loads the SDK. Closed last, after the
    // services' last spans.
    let tracing: Tracing | null = null;
    if (config.OTEL_EXPORTER_OTLP_ENDPOINT) {
      const { createTracing } = await import('./tracing.ts');
      const t = createTracing({
        endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
        serviceName: config.OTEL_SERVICE_NAME || `switchyard-${service}`,
      });
      cleanup.push(() => t.close());
      tracing = t;
    }
    let db: Knex;
    if (embedded.db) {
      // Loaded only here: a production process never loads PGlite.
      const { openEmbeddedDb } = await import('./db/embedded.ts');
      const e = await openEmbeddedDb(join(dataDir, 'pg')).catch((err: unknown) => {
        throw new DependencyError('the embedded database', err);
      });
      cleanup.push(() => e.close());
      db = e.db;
    } else {
      try {
        // The URL is read here, and with it any certificate file it names (sslrootcert ...).
        db = createDb({ url: config.DATABASE_URL, poolMax: config.DATABASE_POOL_MAX, log: logger });
      } catch (err) {
        throw new DependencyError('the database (DATABASE_URL)', err);
      }
      cleanup.push(() => db.destroy());
    }
    trackDb(db);
    cleanup.push(async () => untrackDb(db));
    // Under an advisory lock (db/index.ts): services starting together migrate once.
    await migrateLatest(db, logger).catch((err: unknown) => {
      throw new DependencyError(embedded.db ? 'the embedded database' : 'the database (DATABASE_URL)', err);
    });
    const cipher = createCipher(config.AES_ENCRYPTION_SECRET, [config.AES_ENCRYPTION_SECRET_PREVIOUS]);
    await checkStoredKey(db, cipher);
    // Each adapter is loaded only in the mode that uses it: embedded mode never loads kafkajs.
    const log = embedded.log
      ? await (await import('./embedded/bus.ts')).createEmbeddedBus({
          dir: join(dataDir, 'log'),
          topicPrefix: config.KAFKA_TOPIC_PREFIX,
          partitions: config.KAFKA_PARTITIONS,
          log: logger,
        })
      : (await import('./kafka/index.ts')).createKafkaBus({
          brokers: config.KAFKA_BROKERS,
          clientId: `${config.KAFKA_CLIENT_ID}-${service}`,
          topicPrefix: config.KAFKA_TOPIC_PREFIX,
          partitions: config.KAFKA_PARTITIONS,
          replicationFactor: config.KAFKA_REPLICATION_FACTOR,
          minInsyncReplicas: config.KAFKA_MIN_INSYNC_REPLICAS,
          maxMessageBytes: config.KAFKA_MAX_MESSAGE_BYTES,
          log: logger,
        });
    // Metrics of every consumer and producer, whichever bus (shared/src/metrics.ts).
    const bus = instrumentBus(log);
    cleanup.push(() => bus.close());
    await bus.ensureTopics().catch((err: unknown) => {
      throw new DependencyError(embedded.log ? 'the embedded log' : 'Kafka (KAFKA_BROKERS)', err);
    });
    let closing: Promise<void> | null = null;
    return {
      config,
      logger,
      db,
      bus,
      cipher,
      tracing,
      mode: { log: embedded.log ? 'embedded' : 'kafka', db: embedded.db ? 'embedded' : 'postgres' },
      // The bus first (consumers finish their work and commit), then the database, then the lock.
      close: () => (closing ??= undo()),
    };
  } catch (err) {
    await undo();
    throw err;
  }
}
