// npm run rotate-encryption-key: re-encrypts destination secrets under AES_ENCRYPTION_SECRET.
// Postgres (DATABASE_URL set): 1) set AES_ENCRYPTION_SECRET_PREVIOUS to the old secret and
// AES_ENCRYPTION_SECRET to the new one on every service and restart them; 2) run this; 3) remove
// AES_ENCRYPTION_SECRET_PREVIOUS and restart (nothing reads the old key once this has run).
// Embedded mode (DATABASE_URL empty): stop `npm start`, run this (it generates the new key itself
// when the key is embedded mode's own), start again; later `-- --retire` retires the old key
// (rotate-embedded.ts). Either way it reads only the settings it uses, and changes everything or
// nothing. docs/operations.md, "Rotating the encryption key".
import { parseArgs } from 'node:util';
import { type Config, loadConfig } from '../config/index.ts';
import { createCipher } from '../crypto.ts';
import { createDb, type Knex } from './index.ts';
import { reencryptAll } from './reencrypt.ts';

// `--force` is accepted and ignored: retiring once waited for deliveries in the log, which never need the old key.
const { values: args } = parseArgs({ options: { retire: { type: 'boolean' }, force: { type: 'boolean' } } });

if (!process.env.DATABASE_URL) {
  const { rotateEmbedded } = await import('./rotate-embedded.ts');
  try {
    const r = await rotateEmbedded(process.env, { retire: Boolean(args.retire) });
    console.log(`re-encrypted ${r.rewritten} of ${r.scanned} destinations under the current key`);
    if (r.action === 'rotated') {
      console.log(
        r.keys === 'secrets-file'
          ? 'the new key is in DATA_DIR/secrets.env, the old one kept as AES_ENCRYPTION_SECRET_PREVIOUS; retire it when you like: npm run rotate-encryption-key -- --retire'
          : 'keys from the environment: nothing reads the previous key any more; remove AES_ENCRYPTION_SECRET_PREVIOUS there',
      );
    } else if (r.action === 'finished') {
      console.log(
        'no new key: an earlier rotation was not retired yet (it is finished now, every secret under its key); run npm run rotate-encryption-key -- --retire, then this again for a new key',
      );
    } else {
      console.log(
        r.keys === 'secrets-file'
          ? 'the previous key is retired: removed from DATA_DIR/secrets.env'
          : 'nothing needs the previous key: remove AES_ENCRYPTION_SECRET_PREVIOUS from the environment',
      );
    }
  } catch (err) {
    // Everything is checked before anything changes, and a failed re-encryption puts the file back.
    console.error(`rotate-encryption-key: ${(err as Error).message}; nothing was changed`);
    process.exit(1);
  }
} else {
  // Only what it uses: DATABASE_URL and the two keys (no API_KEY, no API_JWT_SECRET).
  let config: Pick<Config, 'DATABASE_URL' | 'AES_ENCRYPTION_SECRET' | 'AES_ENCRYPTION_SECRET_PREVIOUS'>;
  try {
    config = loadConfig(process.env, ['DATABASE_URL', 'AES_ENCRYPTION_SECRET', 'AES_ENCRYPTION_SECRET_PREVIOUS']);
  } catch (err) {
    console.error(`rotate-encryption-key: ${(err as Error).message}`);
    process.exit(2);
  }
  let db: Knex;
  try {
    db = createDb({ url: config.DATABASE_URL, poolMax: 2 });
  } catch (err) {
    // The URL names a file it cannot read (sslrootcert ...).
    console.error(`rotate-encryption-key: the database (DATABASE_URL): ${(err as Error).message}; nothing was changed`);
    process.exit(1);
  }
  try {
    // One transaction: every row under the current key, or (on any failure) none changed.
    const { scanned, rewritten } = await reencryptAll(
      db,
      createCipher(config.AES_ENCRYPTION_SECRET, [config.AES_ENCRYPTION_SECRET_PREVIOUS]),
    );
    console.log(`re-encrypted ${rewritten} of ${scanned} destinations under the current key`);
  } catch (err) {
    console.error(`rotate-encryption-key: ${(err as Error).message}; nothing was changed`);
    process.exitCode = 1;
  } finally {
    await db.destroy();
  }
}
