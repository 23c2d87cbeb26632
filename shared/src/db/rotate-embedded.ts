/**
 * Encryption-key rotation of an embedded deployment (`npm run rotate-encryption-key` with
 * DATABASE_URL empty; docs/operations.md, "Rotating the encryption key"). Runs while `npm start` is
 * stopped: the data directory belongs to one process.
 *
 * - rotate: when the key is embedded mode's own (DATA_DIR/secrets.env), a new AES_ENCRYPTION_SECRET
 *   is generated and the old one kept as AES_ENCRYPTION_SECRET_PREVIOUS in that file, then every
 *   destination secret is re-encrypted under the new key. When AES_ENCRYPTION_SECRET comes from
 *   the environment, the environment's two secrets are used as they are, as in production.
 * - retire: re-encrypts what may remain, then refuses while deliveries routed before the rotation may
 *   still wait in the log (a delivery record carries the ciphertext it was routed with: the sender
 *   groups' and the retry scheduler's uncommitted records), unless forced; then drops
 *   AES_ENCRYPTION_SECRET_PREVIOUS from secrets.env, so the old key can no longer read anything.
 *
 * All or nothing. Everything that can refuse is checked before anything changes: the settings it
 * uses (only those: API_KEY and API_JWT_SECRET are not needed), the database (opened and migrated),
 * the retire check. The rows are re-encrypted in one transaction. A rotation writes the file (both
 * keys, atomically) just before that transaction and puts the old file back if it fails, so a failure
 * leaves the file and the database as they were; and a crash at any point leaves a file whose two
 * keys read the database, whichever way the transaction went (run it again to finish). Writing the
 * file only after the commit would lose the new key, and every secret with it, to a crash between.
 * Retiring writes the file after the commit.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig, SETTINGS } from '../config/index.ts';
import { createCipher } from '../crypto.ts';
import { createEmbeddedBus } from '../embedded/bus.ts';
import { lockDirectory } from '../embedded/lock.ts';
import { GROUP, TOPIC } from '../bus/topics.ts';
import { DESTINATION_TYPES } from '../model/index.ts';
import { createLogger } from '../log.ts';
import { readEnvFile, writeSecretsFile } from '../secrets-file.ts';
import { openEmbeddedDb } from './embedded.ts';
import { migrateLatest } from './index.ts';
import { reencryptAll } from './reencrypt.ts';

export interface RotateResult {
  action: 'rotated' | 'retired';
  scanned: number;
  rewritten: number;
  /** Where the keys live: embedded mode's secrets file, or the environment (yours to change). */
  keys: 'secrets-file' | 'environment';
}

/** The settings the command reads; nothing else need be set. */
const USED = ['AES_ENCRYPTION_SECRET', 'AES_ENCRYPTION_SECRET_PREVIOUS', 'KAFKA_TOPIC_PREFIX', 'KAFKA_PARTITIONS'] as const;

export async function rotateEmbedded(
  callerEnv: Record<string, string | undefined>,
  opts: { retire?: boolean; force?: boolean } = {},
): Promise<RotateResult> {
  const dataDir = resolve(callerEnv.DATA_DIR || SETTINGS.DATA_DIR.default);
  const file = join(dataDir, 'secrets.env');
  if (!existsSync(join(dataDir, 'pg')))
    throw new Error(`${dataDir} holds no embedded database (set DATA_DIR, or DATABASE_URL for Postgres)`);
  // Refuses while npm start runs on this directory.
  const lock = lockDirectory(dataDir);
  try {
    const stored = readEnvFile(file);
    const fromEnv = Boolean(callerEnv.AES_ENCRYPTION_SECRET);
    const env: Record<string, string> = {
      ...stored,
      ...(Object.fromEntries(Object.entries(callerEnv).filter(([, v]) => v)) as Record<string, string>),
    };
    // What the file is to hold, and when it is written: before the rows change (a new key) or after.
    let next: Record<string, string> | null = null;
    let writeFirst = false;
    if (!fromEnv) {
      if (!stored.AES_ENCRYPTION_SECRET) throw new Error(`${file} has no AES_ENCRYPTION_SECRET: start the service once first`);
      if (opts.retire) {
        const { AES_ENCRYPTION_SECRET_PREVIOUS: retired, ...rest } = stored;
        if (retired !== undefined) next = rest;
      } else if (!stored.AES_ENCRYPTION_SECRET_PREVIOUS) {
        next = {
          ...stored,
          AES_ENCRYPTION_SECRET_PREVIOUS: stored.AES_ENCRYPTION_SECRET,
          AES_ENCRYPTION_SECRET: randomBytes(24).toString('base64url'),
        };
        writeFirst = true;
      }
      // Without a new key, an earlier rotation was interrupted: finish it with the file's two keys.
      const keys = next && !opts.retire ? next : stored;
      env.AES_ENCRYPTION_SECRET = keys.AES_ENCRYPTION_SECRET as string;
      env.AES_ENCRYPTION_SECRET_PREVIOUS = keys.AES_ENCRYPTION_SECRET_PREVIOUS ?? '';
    }
    const config = loadConfig(env, USED);
    const cipher = createCipher(config.AES_ENCRYPTION_SECRET, [config.AES_ENCRYPTION_SECRET_PREVIOUS]);
    if (opts.retire && !opts.force) {
      const waiting = await waitingDeliveries(join(dataDir, 'log'), config.KAFKA_TOPIC_PREFIX, config.KAFKA_PARTITIONS);
      if (waiting.length) {
        throw new Error(
          `deliveries routed before the rotation may still need the previous key: ${waiting.join(', ')} record(s) wait in the log. ` +
            'Start the service until they are delivered (or given up), stop it, and retire again; --force retires now (those deliveries then fail to decrypt).',
        );
      }
    }
    const edb = await openEmbeddedDb(join(dataDir, 'pg'));
    let counts: { scanned: number; rewritten: number };
    try {
      await migrateLatest(edb.db);
      // Both keys durable before any row is rewritten under the new one.
      if (next && writeFirst) writeSecretsFile(file, next);
      try {
        counts = await reencryptAll(edb.db, cipher);
      } catch (err) {
        if (next && writeFirst) writeSecretsFile(file, stored); // rolled back: the file as it was
        throw err;
      }
    } finally {
      await edb.close();
    }
    if (next && opts.retire) writeSecretsFile(file, next);
    return { action: opts.retire ? 'retired' : 'rotated', ...counts, keys: fromEnv ? 'environment' : 'secrets-file' };
  } finally {
    lock.release();
  }
}

/** `topic n` for each delivery or retry topic with records its consumer group has not committed. */
async function waitingDeliveries(dir: string, topicPrefix: string, partitions: number): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const bus = await createEmbeddedBus({ dir, topicPrefix, partitions, log: createLogger('rotate', 'silent') });
  try {
    await bus.ensureTopics();
    const rows =
      (await bus.lag?.([
        ...DESTINATION_TYPES.map((type) => ({ groupId: GROUP.sender(type), topics: [TOPIC.deliveries[type]] })),
        { groupId: GROUP.retryScheduler, topics: TOPIC.retries },
      ])) ?? [];
    const byTopic = new Map<string, number>();
    for (const r of rows) if (r.lag > 0) byTopic.set(r.topic, (byTopic.get(r.topic) ?? 0) + r.lag);
    return [...byTopic].map(([t, n]) => `${t} ${n}`);
  } finally {
    await bus.close();
  }
}
