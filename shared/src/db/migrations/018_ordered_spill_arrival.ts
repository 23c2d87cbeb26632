import type { Knex } from 'knex';

// A drain takes an ordered destination's spill in the order its deliveries were spilled
// (`spilled_at`, then their place in the partition), not in partition order: once
// `deliveries.<type>` gains partitions, a destination's later deliveries may come from a
// lower-numbered partition than the ones spilled before them. A destination's spills are written one
// at a time, in the order its sender reads them, so `spilled_at` (Postgres's clock) keeps that order.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX ordered_spill_arrival ON ordered_spill (tenant_id, destination_id, spilled_at, topic, partition, "offset")');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX ordered_spill_arrival');
}
