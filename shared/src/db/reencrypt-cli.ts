// npm run rotate-encryption-key: re-encrypts destination secrets under AES_ENCRYPTION_SECRET.
// Rotation: 1) set AES_ENCRYPTION_SECRET_PREVIOUS to the old secret and AES_ENCRYPTION_SECRET to the
// new one on every service and restart them; 2) run this; 3) remove AES_ENCRYPTION_SECRET_PREVIOUS.
import { loadConfig } from '../config/index.ts';
import { createCipher } from '../crypto.ts';
import { createDb } from './index.ts';
import { reencryptAll } from './reencrypt.ts';

const config = loadConfig();
if (!config.DATABASE_URL) {
  console.error('DATABASE_URL is not set: key rotation of the embedded database is not supported by this command yet');
  process.exit(1);
}
const db = createDb({ url: config.DATABASE_URL, poolMax: 2 });
try {
  const { scanned, rewritten } = await reencryptAll(
    db,
    createCipher(config.AES_ENCRYPTION_SECRET, [config.AES_ENCRYPTION_SECRET_PREVIOUS]),
  );
  console.log(`re-encrypted ${rewritten} of ${scanned} destinations under the current key`);
} finally {
  await db.destroy();
}
