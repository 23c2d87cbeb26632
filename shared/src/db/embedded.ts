/**
 * The embedded database: PGlite (Postgres compiled to WebAssembly, in this process) behind the same
 * knex client, node-postgres driver, type parsers, migrations and queries as production Postgres.
 *
 * PGlite ships a node-postgres connection (`@electric-sql/pglite/node-postgres`) that passes the
 * wire protocol straight to the in-process server; node-postgres takes it through its `connection`
 * option. So knex's own 'pg' dialect runs unchanged: no knex dialect of a third party, and query
 * text, parameter encoding (simple protocol without bindings, so multi-statement migrations work)
 * and result parsing are node-postgres's, exactly as against a server.
 *
 * PGlite is one backend, one session: the pool holds one connection and queries queue for it.
 * Durability: a commit is written to the files (pwrite) before the query returns, so it survives the
 * process being killed; PGlite's file layer never calls fsync, so it does not survive a power cut or
 * kernel crash the way a Postgres server with fsync=on would.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { createPgConfig, PglitePgConnection } from '@electric-sql/pglite/node-postgres';
import { createDb, type Knex } from './index.ts';

/**
 * PGlite's own start parameters (its defaults as of 0.5: `startParams` replaces them), plus a 16 MB
 * buffer cache instead of the 160 MB PGlite sets: in a process beside the four services the cache is
 * WebAssembly memory, resident once touched and never given back. Embedded mode's idle RSS 493 ->
 * 342 MB and under load 615 -> 452 MB, throughput no lower (docs/performance.md, "PGlite's buffer
 * cache"). What the cache misses is read through the OS page cache: a copy, not a disk read.
 */
const START_PARAMS = [
  '--single',
  '-F',
  '-O',
  '-j',
  ...[
    'search_path=public',
    'exit_on_error=false',
    'log_checkpoints=false',
    'max_worker_processes=0',
    'max_parallel_workers=0',
    'max_parallel_workers_per_gather=0',
    'io_method=sync',
    'max_parallel_maintenance_workers=0',
    'shared_buffers=16MB',
  ].flatMap((p) => ['-c', p]),
];

export interface EmbeddedDb {
  db: Knex;
  close(): Promise<void>;
}

/**
 * Creates the database of an empty or missing `dir` in a child process. PGlite's initdb peaks at
 * about 0.5 GB and leaves ~40 MB of C heap behind in the process that ran it; run in a child, neither
 * stays with the long-lived process (docs/performance.md, "PGlite's initdb in a child process"). The
 * child writes to a sibling directory that is renamed into place, so a start killed midway leaves no
 * half-made database behind.
 */
async function createDatabase(dir: string): Promise<void> {
  const staging = `${dir}.initdb`;
  rmSync(staging, { recursive: true, force: true });
  const script = `const { PGlite } = await import(${JSON.stringify(import.meta.resolve('@electric-sql/pglite'))});
    await (await PGlite.create(process.argv[1], { startParams: JSON.parse(process.argv[2]) })).close();`;
  await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, staging, JSON.stringify(START_PARAMS)], {
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  if (existsSync(dir)) rmdirSync(dir); // empty: rename(2) will not replace it
  renameSync(staging, dir);
}

/** Opens (creating on first use) the database in `dir`. Migrations are the caller's, as with Postgres. */
export async function openEmbeddedDb(dir: string): Promise<EmbeddedDb> {
  if (!existsSync(dir) || readdirSync(dir).length === 0) {
    mkdirSync(dirname(dir), { recursive: true });
    await createDatabase(dir);
  }
  const pglite = await PGlite.create(dir, { startParams: START_PARAMS });
  const db = createDb({
    url: '',
    poolMax: 1,
    // node-postgres takes its connection from `connection`; each client the pool opens gets a new
    // one on the same PGlite (a closed connection object is not reused). A function, so knex keeps
    // this object as it is (it deep-copies a plain object, which would read the getter once).
    connection: () =>
      ({
        ...createPgConfig(pglite),
        get connection() {
          return new PglitePgConnection({ pglite });
        },
      }) as unknown as Knex.PgConnectionConfig,
  });
  return {
    db,
    async close() {
      await db.destroy();
      await pglite.close();
    },
  };
}
