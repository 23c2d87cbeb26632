import { type Config, loadConfig } from './config/index.ts';
import { type Cipher, createCipher } from './crypto.ts';
import { createDb, type Knex, migrateLatest } from './db/index.ts';
import { type Bus, createKafkaBus } from './kafka/index.ts';
import { createLogger, type Logger } from './log.ts';

/** The concrete dependencies of one service process. The only place that chooses implementations. */
export interface Runtime {
  config: Config;
  logger: Logger;
  db: Knex;
  bus: Bus;
  cipher: Cipher;
  close(): Promise<void>;
}

export async function createRuntime(service: string, config: Config = loadConfig()): Promise<Runtime> {
  const logger = createLogger(service, config.LOG_LEVEL);
  const db = createDb({ url: config.DATABASE_URL, poolMax: config.DATABASE_POOL_MAX });
  // Knex takes a lock for migrations, so services starting together migrate once.
  await migrateLatest(db);
  const bus = createKafkaBus({
    brokers: config.KAFKA_BROKERS,
    clientId: `${config.KAFKA_CLIENT_ID}-${service}`,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    partitions: config.KAFKA_PARTITIONS,
    replicationFactor: config.KAFKA_REPLICATION_FACTOR,
    log: logger,
  });
  await bus.ensureTopics();
  const cipher = createCipher(config.AES_ENCRYPTION_SECRET, [config.AES_ENCRYPTION_SECRET_PREVIOUS]);
  return {
    config,
    logger,
    db,
    bus,
    cipher,
    async close() {
      await bus.close();
      await db.destroy();
    },
  };
}
