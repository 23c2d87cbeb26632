import type { Knex } from 'knex';
import type { Cipher } from '../crypto.ts';

const SEALED_COLUMNS = ['credentials', 'delivery_metadata'] as const;

/**
 * Re-encrypts every sealed value written with a previous key under the current key, in one
 * transaction: every row or none (a value no key of `cipher` reads fails the whole run and changes
 * nothing). Read in batches. Safe to run while the service runs (readers accept both keys; a
 * destination changed meanwhile waits for the commit) and safe to run again (rows already on the
 * current key are skipped).
 */
export async function reencryptAll(db: Knex, cipher: Cipher, batchSize = 500): Promise<{ scanned: number; rewritten: number }> {
  return db.transaction((trx) => reencryptIn(trx, cipher, batchSize));
}

async function reencryptIn(db: Knex.Transaction, cipher: Cipher, batchSize: number): Promise<{ scanned: number; rewritten: number }> {
  let scanned = 0;
  let rewritten = 0;
  let after: [string, string] = ['', ''];
  for (;;) {
    const rows = (await db('destinations')
      .select('tenant_id', 'id', ...SEALED_COLUMNS)
      .whereRaw('(tenant_id, id) > (?, ?)', after)
      .orderBy([{ column: 'tenant_id' }, { column: 'id' }])
      .limit(batchSize)) as Array<{ tenant_id: string; id: string; credentials: string | null; delivery_metadata: string | null }>;
    if (!rows.length) break;
    for (const row of rows) {
      scanned++;
      const patch: Record<string, string> = {};
      for (const col of SEALED_COLUMNS) {
        const v = row[col];
        if (v && cipher.isStale(v)) patch[col] = cipher.encrypt(opened(cipher, v, row));
      }
      if (Object.keys(patch).length) {
        // Only rewrite if the row still holds what was read, so a concurrent update is never undone.
        const n = await db('destinations')
          .where({ tenant_id: row.tenant_id, id: row.id })
          .where((w) => {
            for (const col of SEALED_COLUMNS) {
              if (row[col] === null) w.whereNull(col);
              else w.where(col, row[col]);
            }
          })
          .update(patch);
        rewritten += n;
      }
    }
    const last = rows.at(-1);
    if (!last) break;
    after = [last.tenant_id, last.id];
  }
  return { scanned, rewritten };
}

/** A sealed value opened, or an error naming its destination and the keys that failed to open it. */
function opened(cipher: Cipher, sealed: string, row: { tenant_id: string; id: string }): string {
  try {
    return cipher.decrypt(sealed);
  } catch {
    throw new Error(
      `destination ${row.tenant_id}/${row.id} was written with a key that is neither AES_ENCRYPTION_SECRET nor AES_ENCRYPTION_SECRET_PREVIOUS: set the key that wrote it as AES_ENCRYPTION_SECRET_PREVIOUS`,
    );
  }
}
