import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { MIGRATIONS } from './migrations/index.ts';

export type { Knex };

// Postgres returns int8 (bigint) as strings by default; counts and sequence numbers here fit in a double.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export interface DbOptions {
  url: string;
  poolMax: number;
  /** Replaces `url` (the embedded database hands node-postgres its own connection: db/embedded.ts). */
  connection?: Knex.Config['connection'];
  /** Where knex's own notices go (at debug): never its default, which prints stacks to stdout. */
  log?: { debug(fields: object, msg: string): void };
}

function knexLog(log: DbOptions['log']): Knex.Config['log'] {
  const note = (message: unknown) => log?.debug({ knex: String(message) }, 'database client notice');
  return { warn: note, error: note, deprecate: note, debug: note };
}

/** The URL of each database made from one (a server, not the embedded database): migrateLatest's lock. */
const serverUrls = new WeakMap<Knex, string>();

export function createDb(opts: DbOptions): Knex {
  const db = knexFactory({
    client: 'pg',
    connection: opts.connection ?? opts.url,
    pool: { min: 0, max: opts.poolMax },
    // knex's default logger writes each failed connection's stack to stdout, between the JSON log's
    // lines; the failure reaches its caller and /readyz anyway, so its notices are debug lines.
    log: knexLog(opts.log),
    // Migrations are listed in code, not discovered on disk, so type stripping and bundlers both work.
    migrations: {
      tableName: 'knex_migrations',
      migrationSource: {
        getMigrations: async () => MIGRATIONS.map((m) => m.name),
        getMigrationName: (name: string) => name,
        getMigration: async (name: string) => {
          const m = MIGRATIONS.find((x) => x.name === name);
          if (!m) throw new Error(`unknown migration ${name}`);
          return m;
        },
      },
    },
  });
  if (!opts.connection) serverUrls.set(db, opts.url);
  return db;
}

const LOCK_TABLE = 'knex_migrations_lock';

/**
 * Applies pending migrations, safely whatever the number of processes doing it at once (every
 * service migrates at start). knex's own lock is a row of a table it creates on first use, and that
 * creation is not safe when several processes do it together: they fail on each other's tables, and
 * may leave two lock rows, which no later migrate gets past. So the whole step runs under a Postgres
 * advisory lock, taken on a connection of its own (released by Postgres if the process dies): one
 * process migrates, the others wait and then find nothing to do. Under it, a lock table left stuck
 * (by such a race, or a process killed while migrating) is put right, as no other migrate of this
 * code can be running. The embedded database belongs to one process (its directory lock): no
 * advisory lock is needed, the repair still applies.
 */
export async function migrateLatest(db: Knex, log?: { warn(fields: object, msg: string): void }): Promise<string[]> {
  const url = serverUrls.get(db);
  let lock: pg.Client | null = null;
  if (url) {
    lock = new pg.Client({ connectionString: url });
    await lock.connect();
  }
  try {
    await lock?.query("SELECT pg_advisory_lock(hashtext('switchyard:migrations'))");
    const repaired = await repairLockTable(db);
    if (repaired) log?.warn({ lock_table: repaired }, 'migration lock table was stuck; put right');
    const [, applied] = (await db.migrate.latest()) as [number, string[]];
    return applied;
  } finally {
    // Closing the session releases the advisory lock.
    await lock?.end().catch(() => undefined);
  }
}

/**
 * Under the advisory lock: leaves knex's lock table with its one unlocked row when it has none,
 * several, or a lock that no running migrate holds. Returns what was wrong, or null.
 */
async function repairLockTable(db: Knex): Promise<string | null> {
  if (!(await db.schema.hasTable(LOCK_TABLE))) return null;
  const rows = (await db(LOCK_TABLE).select('is_locked')) as Array<{ is_locked: number }>;
  const locked = rows.filter((r) => r.is_locked !== 0).length;
  if (rows.length === 1 && locked === 0) return null;
  await db.transaction(async (trx) => {
    await trx(LOCK_TABLE).del();
    await trx(LOCK_TABLE).insert({ is_locked: 0 });
  });
  return `${rows.length} row(s), ${locked} locked`;
}
