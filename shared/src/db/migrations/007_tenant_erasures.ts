import type { Knex } from 'knex';

// A deleted tenant's events, deliveries, attempts and idempotency keys are erased in the background
// (shared/src/db/erasure.ts); one row per deletion says what is left to erase: the tenant's rows
// from before `cutoff` (the deletion's time), so a tenant created again under the id keeps its own.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE tenant_erasures (
      tenant_id  text NOT NULL,
      cutoff     timestamptz NOT NULL DEFAULT now(),
      done_at    timestamptz,             -- every row from before cutoff erased (late ones: see erasure.ts)
      PRIMARY KEY (tenant_id, cutoff)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS tenant_erasures');
}
