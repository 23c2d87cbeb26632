import type { Knex } from 'knex';

// Canceling what is pending for a destination (POST .../destinations/{id}/cancel) raises its
// cancel_epoch; deliveries carry the epoch they were routed with in their destination snapshot, and
// a sender cancels those below the destination's current one. A constant default: no rewrite.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE destinations ADD COLUMN cancel_epoch integer NOT NULL DEFAULT 0');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE destinations DROP COLUMN cancel_epoch');
}
