import type { Knex } from 'knex';

// A destination's `ordered` flag (true: its deliveries are made one at a time, in the order of the
// events topic; docs/delivery-controls.md, "Ordered delivery"). The router copies it into the snapshot its
// deliveries carry. Default false: existing rows keep the unordered path.
// And what blocks each ordered destination now: the delivery being retried in place, its next try, and
// how many deliveries wait behind it; written by the sender at each failed try, removed once it ends.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE destinations ADD COLUMN ordered boolean NOT NULL DEFAULT false');
  await knex.raw(`CREATE TABLE ordered_blocks (
    tenant_id text NOT NULL,
    destination_id text NOT NULL,
    event_id text NOT NULL,
    attempt_number integer NOT NULL,
    next_attempt_at timestamptz NOT NULL,
    waiting integer NOT NULL,
    since timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, destination_id)
  )`);
  // Where each ordered destination's deliveries have ended: the offset of the last one in its delivery
  // partition. After a crash, records up to it come again and are skipped rather than sent out of order.
  await knex.raw(`CREATE TABLE ordered_positions (
    tenant_id text NOT NULL,
    destination_id text NOT NULL,
    topic text NOT NULL,
    partition integer NOT NULL,
    "offset" bigint NOT NULL,
    PRIMARY KEY (tenant_id, destination_id)
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE ordered_positions');
  await knex.raw('DROP TABLE ordered_blocks');
  await knex.raw('ALTER TABLE destinations DROP COLUMN ordered');
}
