import type { Knex } from 'knex';

// A destination belongs to one tenant: without a dependency statistic on (tenant_id, destination_id)
// the planner multiplies the two selectivities, underestimates a destination's rows by the tenant's
// share, and sorts instead of reading in index order (docs/queries.md).
//
// Here rather than in 001: 001 had been applied to databases before these statements were added to
// it, and those never got them. Databases that did get them from 001 already hold them under the same
// names (parent and DEFAULT partition) or under the names CREATE TABLE ... LIKE ... INCLUDING
// STATISTICS chose (range partitions), so each table of the tree gets one only when it has none:
// old and new databases converge. Partitions made later copy the parent's (shared/src/db/partitions.ts).

const TABLES = ['deliveries', 'attempts'] as const;

/** The tables of `table`'s partition tree (itself, its DEFAULT and range partitions), with or without the statistic. */
async function treeOf(knex: Knex, table: string, withStatistic: boolean): Promise<{ name: string; stats: string[] }[]> {
  const res = await knex.raw(
    `SELECT c.relname AS name,
            ARRAY(SELECT format('%I.%I', n.nspname, s.stxname)
                    FROM pg_statistic_ext s JOIN pg_namespace n ON n.oid = s.stxnamespace
                   WHERE s.stxrelid = c.oid AND 'f' = ANY (s.stxkind)
                     AND s.stxkeys::int2[] @> ARRAY(SELECT a.attnum FROM pg_attribute a
                                                     WHERE a.attrelid = c.oid AND a.attname IN ('tenant_id', 'destination_id'))
                 ) AS stats
       FROM pg_partition_tree(?::regclass) t
       JOIN pg_class c ON c.oid = t.relid`,
    [table],
  );
  return (res.rows as { name: string; stats: string[] }[]).filter((r) => r.stats.length > 0 === withStatistic);
}

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    for (const { name } of await treeOf(knex, table, false)) {
      // deliveries_tenant_destination, deliveries_default_tenant_destination, ... (the names 001 used).
      await knex.raw('CREATE STATISTICS IF NOT EXISTS ?? (dependencies) ON tenant_id, destination_id FROM ??', [
        `${name}_tenant_destination`,
        name,
      ]);
    }
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    // Every one of the tree, whoever named it: those copied to partitions made since are gone too.
    const stats = (await treeOf(knex, table, true)).flatMap((r) => r.stats);
    if (stats.length) await knex.raw(`DROP STATISTICS IF EXISTS ${stats.join(', ')}`);
  }
}
