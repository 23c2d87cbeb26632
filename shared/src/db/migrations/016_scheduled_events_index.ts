import type { Knex } from 'knex';

// The scheduled events still ahead, counted for the `switchyard_scheduled_events` gauge at each
// scrape: a partial index, so the count reads only scheduled events (most events have no deliver_at).
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX events_deliver_at ON events (deliver_at) WHERE deliver_at IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX events_deliver_at');
}
