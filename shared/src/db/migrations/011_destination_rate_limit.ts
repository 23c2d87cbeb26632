import type { Knex } from 'knex';

// A destination's rate limit ({per_second?, per_minute?}, null: none). The router copies it into the
// snapshot its deliveries carry; the senders pace by the destination's current one. No default: no rewrite.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE destinations ADD COLUMN rate_limit jsonb');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE destinations DROP COLUMN rate_limit');
}
