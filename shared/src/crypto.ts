import { createCipheriv, createDecipheriv, createHash, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM for secrets at rest (destination credentials and delivery_metadata).
 * Ciphertext format: `v1.<key id>.<base64url(iv | tag | ciphertext)>`. The key id (a hash of the
 * key) tells which secret wrote a value, so during a rotation both the current and the previous
 * secret stay readable while `npm run rotate-encryption-key` re-encrypts every row.
 */
export interface Cipher {
  encrypt(plain: string): string;
  decrypt(token: string): string;
  /** True when the value was written with a key other than the current one. */
  isStale(token: string): boolean;
}

interface Key {
  id: string;
  bytes: Buffer;
  /** The same key as a KeyObject, made once: a raw Buffer key is converted on every cipher (about 4x the cost). */
  object: KeyObject;
}

function deriveKey(secret: string): Key {
  const bytes = createHash('sha256').update(`switchyard:aes-256-gcm:${secret}`).digest();
  return { bytes, object: createSecretKey(bytes), id: createHash('sha256').update(bytes).digest('hex').slice(0, 8) };
}

export function createCipher(current: string, previous: readonly string[] = []): Cipher {
  const key = deriveKey(current);
  const keys = new Map<string, Key>([[key.id, key]]);
  for (const p of previous) if (p) keys.set(deriveKey(p).id, deriveKey(p));

  return {
    encrypt(plain) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key.object, iv);
      const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return `v1.${key.id}.${Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url')}`;
    },
    decrypt(token) {
      const [version, id, payload] = token.split('.');
      const k = id ? keys.get(id) : undefined;
      if (version !== 'v1' || !k || !payload) throw new Error('ciphertext was written with an unknown key or format');
      const raw = Buffer.from(payload, 'base64url');
      const d = createDecipheriv('aes-256-gcm', k.object, raw.subarray(0, 12));
      d.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8');
    },
    isStale(token) {
      return token.split('.')[1] !== key.id;
    },
  };
}
