import type { Knex } from 'knex';

// The spill of ordered destinations (docs/delivery-controls.md, "Ordered delivery"): while one of
// their deliveries blocks, it and every later one of the destination are written here, in the order
// of their delivery partition (topic, partition, offset), and taken off that partition at once, so
// a blocked destination holds none of its partition's slots; the sender drains them in that order.
// `type` lets each sender find the spills of the types it delivers (the orphans no record points to).
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE ordered_spill (
    tenant_id text NOT NULL,
    destination_id text NOT NULL,
    topic text NOT NULL,
    partition integer NOT NULL,
    "offset" bigint NOT NULL,
    type text NOT NULL,
    event_id text NOT NULL,
    delivery text NOT NULL,
    spilled_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, destination_id, topic, partition, "offset")
  )`);
  await knex.raw('CREATE INDEX ordered_spill_type ON ordered_spill (type)');
  // The event of the last ordered delivery that ended: where the router read it in the events topic.
  // A router that crashed routes its last events again, as new delivery records after later ones;
  // the sender skips them by this (their record offsets are past the position).
  await knex.raw('ALTER TABLE ordered_positions ADD COLUMN event_partition integer, ADD COLUMN event_offset bigint');
  // Which sender drains a destination's spill, until when (renewed while it drains): one at a time.
  await knex.raw(`CREATE TABLE ordered_drains (
    tenant_id text NOT NULL,
    destination_id text NOT NULL,
    owner text NOT NULL,
    until timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, destination_id)
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE ordered_drains');
  await knex.raw('DROP TABLE ordered_spill');
  await knex.raw('ALTER TABLE ordered_positions DROP COLUMN event_partition, DROP COLUMN event_offset');
}
