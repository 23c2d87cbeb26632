/**
 * Encryption-key rotation of an embedded deployment (`npm run rotate-encryption-key` with
 * DATABASE_URL empty; docs/operations.md, "Rotating the encryption key"). Runs while `npm start` is
 * stopped: the data directory belongs to one process.
 *
 * - rotate: when the key is embedded mode's own (DATA_DIR/secrets.env), a new AES_ENCRYPTION_SECRET
 *   is generated and the old one kept as AES_ENCRYPTION_SECRET_PREVIOUS in that file, then every
 *   destination secret is re-encrypted under the new key. When AES_ENCRYPTION_SECRET comes from
 *   the environment, the environment's two secrets are used as they are, as in production.
 * - rotate again before the old key is retired: no new key (the file would need three); the earlier
 *   rotation is finished (every secret under its key) and the answer says to retire, then rotate.
 * - retire: re-encrypts what may remain, then drops AES_ENCRYPTION_SECRET_PREVIOUS from secrets.env,
 *   so the old key can no longer read anything. Nothing else needs it: a sender opens the secrets of
 *   the destination as stored now before every attempt, never the ciphertext a delivery record in
 *   the log was routed with (services/sender/src/destination-state.ts).
 *
 * All or nothing. Everything that can refuse is checked before anything changes: the settings it
 * uses (only those: API_KEY and API_JWT_SECRET are not needed) and the database (opened and
 * migrated). The rows are re-encrypted in one transaction. A rotation writes the file (both keys, atomically) just before that transaction and puts the old file back if it fails, so a failure
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
import { lockDirectory } from '../embedded/lock.ts';
import { readEnvFile, writeSecretsFile } from '../secrets-file.ts';
import { openEmbeddedDb } from './embedded.ts';
import { migrateLatest } from './index.ts';
import { reencryptAll } from './reencrypt.ts';

export interface RotateResult {
  /** `finished`: an earlier rotation was not retired yet; it was completed and no new key was made. */
  action: 'rotated' | 'finished' | 'retired';
  scanned: number;
  rewritten: number;
  /** Where the keys live: embedded mode's secrets file, or the environment (yours to change). */
  keys: 'secrets-file' | 'environment';
}

/** The settings the command reads; nothing else need be set. */
const USED = ['AES_ENCRYPTION_SECRET', 'AES_ENCRYPTION_SECRET_PREVIOUS'] as const;

export async function rotateEmbedded(
  callerEnv: Record<string, string | undefined>,
  opts: { retire?: boolean } = {},
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
      // Without a new key, an earlier rotation is not retired yet (or was interrupted): finish it with the file's two keys.
      const keys = next && !opts.retire ? next : stored;
      env.AES_ENCRYPTION_SECRET = keys.AES_ENCRYPTION_SECRET as string;
      env.AES_ENCRYPTION_SECRET_PREVIOUS = keys.AES_ENCRYPTION_SECRET_PREVIOUS ?? '';
    }
    const config = loadConfig(env, USED);
    const cipher = createCipher(config.AES_ENCRYPTION_SECRET, [config.AES_ENCRYPTION_SECRET_PREVIOUS]);
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
    const action = opts.retire ? 'retired' : fromEnv || next ? 'rotated' : 'finished';
    return { action, ...counts, keys: fromEnv ? 'environment' : 'secrets-file' };
  } finally {
    lock.release();
  }
}
