import type { Knex } from 'knex';

// Which destination types have a sender running: each sender instance marks its types every 30 s.
// The gateway reads it to say why a delivery is pending (no sender of its type has been seen).
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE sender_presence (
      type     text PRIMARY KEY,
      seen_at  timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS sender_presence');
}
