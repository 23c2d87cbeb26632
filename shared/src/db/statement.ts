/**
 * Statements the pipeline runs many times a second, prepared once per connection: node-postgres
 * sends a named statement's text to Postgres on a connection's first call only, and Postgres parses
 * and plans it there; every later call binds new parameters to it. Unnamed, each call was parsed and
 * planned again, and planning cost more than running for the router's small batches (0.13-0.20 ms
 * against 0.09-0.21 ms a call at 300 events/s, docs/performance.md).
 *
 * The contract: a statement's text is fixed (lists go as one array or JSON parameter, never as
 * `IN (?, ?, ...)`), and a name belongs to one text, which `statement` checks as the module loads,
 * since node-postgres refuses a second text under a name already prepared on a connection. Results
 * name their columns (no `SELECT *` of a table in the output), so a column added by a migration
 * cannot change a prepared statement's result. A connection pooler in front of Postgres must keep
 * prepared statements (PgBouncer 1.21+ with `max_prepared_statements`, or session pooling).
 */
import type { Knex } from 'knex';

export interface Statement {
  readonly name: string;
  readonly sql: string;
  /** Runs it on `db` (a transaction or the pool) with positional bindings for its `?`s. */
  run<R = { rows: unknown[] }>(db: Knex | Knex.Transaction, bindings: readonly Knex.RawBinding[]): Promise<R>;
}

const defined = new Map<string, string>();

export function statement(name: string, sql: string): Statement {
  const before = defined.get(name);
  if (before !== undefined && before !== sql) throw new Error(`statement name ${name} is already used for another text`);
  defined.set(name, sql);
  return {
    name,
    sql,
    run: <R>(db: Knex | Knex.Transaction, bindings: readonly Knex.RawBinding[]) =>
      db.raw(sql, bindings as Knex.RawBinding[]).options({ name }) as unknown as Promise<R>,
  };
}
