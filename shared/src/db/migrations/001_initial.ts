import type { Knex } from 'knex';
import { ensurePartitions } from '../partitions.ts';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE tenants (
      id          text PRIMARY KEY,
      metadata    jsonb,
      created_at  timestamptz NOT NULL DEFAULT now(),
      updated_at  timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE destinations (
      tenant_id         text NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      id                text NOT NULL,
      type              text NOT NULL,
      topics            text[] NOT NULL,            -- {'*'} means every topic
      config            jsonb NOT NULL DEFAULT '{}',
      credentials       text,                        -- AES-256-GCM ciphertext of a JSON object
      delivery_metadata text,                        -- AES-256-GCM ciphertext of a JSON object
      metadata          jsonb,
      filter            jsonb,
      disabled_at       timestamptz,
      created_at        timestamptz NOT NULL DEFAULT now(),
      updated_at        timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );

    -- events, deliveries and attempts grow without bound, so they are range-partitioned by server
    -- time (the event's own time is caller-supplied and unbounded, so it cannot be the key).
    -- shared/src/db/partitions.ts creates partitions ahead of time and drops expired ones; the
    -- DEFAULT partition only catches rows outside every range, so an insert never fails.
    -- A primary key of a partitioned table must contain the partition key; dedup of events by
    -- (tenant_id, id) happens before these tables (the event_ids table).
    -- docs/queries.md explains every index by the query it serves.

    CREATE TABLE events (
      tenant_id               text NOT NULL,
      id                      text NOT NULL,
      topic                   text NOT NULL,
      time                    timestamptz NOT NULL,         -- event time, caller-suppliable
      metadata                jsonb,
      data                    jsonb NOT NULL,
      eligible_for_retry      boolean NOT NULL DEFAULT true,
      destination_id          text,                         -- set when the publish targeted one destination
      received_at             timestamptz NOT NULL DEFAULT now(),  -- server time: the partition key
      matched_destination_ids text[] NOT NULL DEFAULT '{}', -- destinations the router sent it to
      skipped_destination_ids text[] NOT NULL DEFAULT '{}', -- matching but disabled
      PRIMARY KEY (tenant_id, id, received_at)
    ) PARTITION BY RANGE (received_at);
    CREATE TABLE events_default PARTITION OF events DEFAULT;
    CREATE INDEX events_tenant_time ON events (tenant_id, time, id);
    CREATE INDEX events_time ON events (time, id, tenant_id);

    -- One row per event x destination: the current state of that delivery.
    CREATE TABLE deliveries (
      tenant_id       text NOT NULL,
      event_id        text NOT NULL,
      destination_id  text NOT NULL,
      topic           text NOT NULL,
      event_time      timestamptz NOT NULL,
      status          text NOT NULL CHECK (status IN ('pending', 'success', 'failed', 'skipped')),
      attempts        integer NOT NULL DEFAULT 0,
      last_attempt_at timestamptz,
      successful_at   timestamptz,
      created_at      timestamptz NOT NULL DEFAULT now(),  -- server time: the partition key
      updated_at      timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, event_id, destination_id, created_at)
    ) PARTITION BY RANGE (created_at);
    CREATE TABLE deliveries_default PARTITION OF deliveries DEFAULT;
    -- created_at (= the event's received_at, set by the writer) rides along so a page of event keys
    -- also names the partition of each event.
    CREATE INDEX deliveries_destination ON deliveries (tenant_id, destination_id, event_time, event_id, status) INCLUDE (created_at);
    CREATE INDEX deliveries_status ON deliveries (tenant_id, status, event_time, event_id) INCLUDE (created_at);
    -- The tenant -> destination statistics of deliveries and attempts: 004_tenant_destination_statistics.

    CREATE TABLE attempts (
      id              uuid NOT NULL,                       -- UUIDv7, time-ordered
      tenant_id       text NOT NULL,
      destination_id  text NOT NULL,
      event_id        text NOT NULL,
      topic           text NOT NULL,
      status          text NOT NULL CHECK (status IN ('success', 'failed')),
      code            text NOT NULL,
      response_data   jsonb,
      attempt_number  integer NOT NULL,
      manual          boolean NOT NULL DEFAULT false,
      time            timestamptz NOT NULL,                -- server time of the attempt: the partition key
      duration_ms     integer,
      final           boolean NOT NULL DEFAULT false,      -- no automatic retry follows
      PRIMARY KEY (id, time)
    ) PARTITION BY RANGE (time);
    CREATE TABLE attempts_default PARTITION OF attempts DEFAULT;
    -- status trails the sort keys so a status filter is checked inside the index, without heap visits.
    CREATE INDEX attempts_destination ON attempts (tenant_id, destination_id, time, id, status);
    CREATE INDEX attempts_tenant ON attempts (tenant_id, time, id, status);
    CREATE INDEX attempts_event ON attempts (event_id, time, id);
    CREATE INDEX attempts_time ON attempts (time, id, status);
  `);
  // Partitions around today, so a fresh database starts with rows in their own partitions; the
  // maintenance loop (startPartitionMaintenance) keeps creating them ahead from then on.
  await ensurePartitions(knex, new Date());
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS attempts, deliveries, events, destinations, tenants');
}
