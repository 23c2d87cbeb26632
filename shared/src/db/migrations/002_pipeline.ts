import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- Durable idempotency of event ids (see docs/architecture.md, "Duplicates").
    -- The gateway reserves caller-supplied ids ('pending', then 'accepted' once Kafka acknowledged);
    -- the router claims every event for the one record (partition, offset) allowed to route it.
    CREATE TABLE event_ids (
      tenant_id        text NOT NULL,
      id               text NOT NULL,
      state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'accepted')),
      reserved_at      timestamptz NOT NULL DEFAULT now(),
      claim_partition  integer,
      claim_offset     bigint,
      PRIMARY KEY (tenant_id, id)
    );
    CREATE INDEX event_ids_reserved_at ON event_ids (reserved_at);

    -- Consecutive failed attempts per destination, for alerts and auto-disable.
    CREATE TABLE destination_health (
      tenant_id             text NOT NULL,
      destination_id        text NOT NULL,
      consecutive_failures  integer NOT NULL DEFAULT 0,
      last_attempt_at       timestamptz,
      alerted_at            timestamptz,
      PRIMARY KEY (tenant_id, destination_id)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS destination_health, event_ids');
}
