import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- The received_at of the attempt's event: the events partition key. With it, include=event on a
    -- page of attempts reads each event from its own partition instead of probing every one.
    -- NULL on rows written before this column existed; those are looked up in every partition.
    ALTER TABLE attempts ADD COLUMN event_received_at timestamptz;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE attempts DROP COLUMN event_received_at');
}
