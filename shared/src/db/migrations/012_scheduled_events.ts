import type { Knex } from 'knex';

// Scheduled events (publish with deliver_at or delay_seconds): when an event's deliveries are due,
// kept with the event so listings can say `scheduled` until then; and the scheduled events canceled
// before they were due, which the senders check when such a delivery comes due. No default: no rewrite.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE events ADD COLUMN deliver_at timestamptz');
  await knex.raw(`CREATE TABLE event_cancellations (
    tenant_id text NOT NULL,
    event_id text NOT NULL,
    canceled_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, event_id)
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE event_cancellations');
  await knex.raw('ALTER TABLE events DROP COLUMN deliver_at');
}
