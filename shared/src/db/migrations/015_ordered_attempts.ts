import type { Knex } from 'knex';

// With each ordered destination's position, the attempts of the deliveries that ended up to it whose
// write to the attempts topic was not yet acknowledged when it was saved (JSON, AttemptRecord[]).
// A sender killed before writing them skips those deliveries when their records come again; it
// writes these attempts again instead, with their ids, so the attempts service stores each once.
// `ended_at` places the row for a tenant's erasure (the attempts hold its events' ids and answers).
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE ordered_positions ADD COLUMN attempts text, ADD COLUMN ended_at timestamptz NOT NULL DEFAULT now()');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE ordered_positions DROP COLUMN attempts, DROP COLUMN ended_at');
}
