/**
 * Poison records: one record that can never be written must not hold up its partition. A batch
 * write that fails is retried in place only when the failure can pass (isTransient: the database
 * went away, a deadlock, a lock timeout, out of resources, a restart); a deterministic failure
 * (bad data, a constraint, a schema error) is narrowed down by halving the batch until the records
 * that fail alone are found. Each such record gets its `repairs` tried in turn (a version of it
 * that can be stored, say so in the value), and when none is written it goes to the dead-letter
 * sink with the reason, so the rest of the batch, and the partition, move on.
 */

/**
 * Postgres SQLSTATE classes that can succeed when tried again: 08 connection, 40 serialization
 * failure or deadlock, 53 insufficient resources, 55P03 lock not available (55 otherwise is an
 * object in the wrong state, which a retry does not change), 57 operator intervention (shutdown,
 * statement timeout), 58 system error (I/O), XX internal. Everything of class 22 (data exception),
 * 23 (integrity constraint), 42 (syntax or schema), 54 (program limit, e.g. nesting too deep),
 * 0A (feature not supported) and the rest is deterministic: the same record fails the same way.
 */
const TRANSIENT_CLASSES = new Set(['08', '40', '53', '57', '58', 'XX']);

/**
 * Whether a failed write can pass when tried again. An error without a SQLSTATE (the connection
 * broke, the pool timed out, our own bug) is treated as transient: our faults never skip a record.
 */
export function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  if (code === '55P03') return true;
  return TRANSIENT_CLASSES.has(code.slice(0, 2));
}

export interface Isolation<R, O> {
  /** Writes records in one go (all or nothing); resolves to what the write produced for them. */
  write(records: R[]): Promise<O[]>;
  /** Storable versions of a record that failed alone, tried in order (none: straight to dead letter). */
  repairs?(record: R): R[];
  /** Takes a record that cannot be written, with the reason (dead-letter topic, log, count). */
  deadLetter(record: R, reason: string): Promise<void>;
}

/** SQLSTATE and Postgres's own message (knex puts the statement before it: not wanted in a header). */
const reasonOf = (err: unknown) => {
  const e = err as { code?: string; message?: string };
  const message = e.message ?? String(err);
  const own = message.includes(' - ') ? message.slice(message.lastIndexOf(' - ') + 3) : message;
  return `${e.code ? `${e.code} ` : ''}${own}`.slice(0, 1000);
};

/**
 * Writes records, isolating those that fail deterministically (see the module header); throws
 * only a transient failure, which the consumer retries in place.
 */
export async function writeIsolating<R, O>(records: R[], iso: Isolation<R, O>): Promise<O[]> {
  if (!records.length) return [];
  try {
    return await iso.write(records);
  } catch (err) {
    if (isTransient(err)) throw err;
    if (records.length > 1) {
      const half = Math.ceil(records.length / 2);
      // In order: the first half's writes land before the second's, as they would have together.
      const first = await writeIsolating(records.slice(0, half), iso);
      return [...first, ...(await writeIsolating(records.slice(half), iso))];
    }
    const record = records[0] as R;
    let last = err;
    for (const repaired of iso.repairs?.(record) ?? []) {
      try {
        return await iso.write([repaired]);
      } catch (again) {
        if (isTransient(again)) throw again;
        last = again;
      }
    }
    await iso.deadLetter(record, reasonOf(last));
    return [];
  }
}
