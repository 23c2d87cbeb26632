import type { Knex } from 'knex';

// ordered_blocks.waiting is not kept: the deliveries waiting behind a block are the destination's
// spill (014), counted when GET .../order is read.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE ordered_blocks DROP COLUMN waiting');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE ordered_blocks ADD COLUMN waiting integer NOT NULL DEFAULT 0');
}
