// Tests on both databases the service runs on: a fresh Postgres database (the stack, DATABASE_URL's
// server) and a fresh PGlite one (embedded mode, a copy of the run's migrated template), each
// removed after its test. Apart from testing/index.ts, so that a test that needs no database does
// not load PGlite.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedDb } from '../db/embedded.ts';
import { createDb, type Knex, migrateLatest } from '../db/index.ts';
import { copyMigratedEmbeddedDb } from './embedded-template.ts';
import { createTestDatabase, type Teardown } from './index.ts';

export type DatabaseKind = 'Postgres' | 'PGlite';

/** A fresh, migrated database of `kind`, closed and removed at `t`'s teardown. */
export async function openTestDb(t: Teardown, kind: DatabaseKind): Promise<Knex> {
  if (kind === 'Postgres') {
    const db = createDb({ url: await createTestDatabase(t), poolMax: 2 });
    t.teardown(() => db.destroy());
    await migrateLatest(db);
    return db;
  }
  const dir = mkdtempSync(join(tmpdir(), 'sy-test-db-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await copyMigratedEmbeddedDb(dir);
  const e = await openEmbeddedDb(dir);
  t.teardown(() => e.close());
  await migrateLatest(e.db);
  return e.db;
}

/** A test runner's `t.test`, as far as onBothDatabases needs it. */
interface Tests<T extends Teardown> {
  test(name: string, fn: (t: T) => Promise<void>): unknown;
}

/** Runs `check` as two subtests of `t`: on Postgres, and on PGlite as embedded mode runs it (`check` names its test type). */
export function onBothDatabases<T extends Teardown>(t: Tests<NoInfer<T>>, what: string, check: (t: T, db: Knex) => Promise<void>): void {
  for (const kind of ['Postgres', 'PGlite'] as const) {
    t.test(`${what} (${kind === 'Postgres' ? 'Postgres' : 'PGlite, embedded mode'})`, async (t) => check(t, await openTestDb(t, kind)));
  }
}
