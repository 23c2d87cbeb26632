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
}

export function createDb(opts: DbOptions): Knex {
  return knexFactory({
    client: 'pg',
    connection: opts.connection ?? opts.url,
    pool: { min: 0, max: opts.poolMax },
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
}

export async function migrateLatest(db: Knex): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}
