import type { Knex } from 'knex';

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

    CREATE TABLE events (
      tenant_id          text NOT NULL,
      id                 text NOT NULL,
      topic              text NOT NULL,
      time               timestamptz NOT NULL,
      metadata           jsonb,
      data               jsonb NOT NULL,
      eligible_for_retry boolean NOT NULL DEFAULT true,
      destination_id     text,                       -- set when the publish targeted one destination
      received_at        timestamptz NOT NULL DEFAULT now(),
      matched_destination_ids text[] NOT NULL DEFAULT '{}',
      skipped_destination_ids text[] NOT NULL DEFAULT '{}',
      PRIMARY KEY (tenant_id, id)
    );

    -- One row per (event, destination): the state of that delivery.
    CREATE TABLE deliveries (
      tenant_id        text NOT NULL,
      event_id         text NOT NULL,
      destination_id   text NOT NULL,
      topic            text NOT NULL,
      event_time       timestamptz,
      status           text NOT NULL CHECK (status IN ('pending', 'success', 'failed', 'skipped')),
      attempts         integer NOT NULL DEFAULT 0,
      last_attempt_at  timestamptz,
      successful_at    timestamptz,
      created_at       timestamptz NOT NULL DEFAULT now(),
      updated_at       timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, event_id, destination_id)
    );
    CREATE INDEX events_tenant_time ON events (tenant_id, time DESC, id DESC);

    CREATE TABLE attempts (
      id              text PRIMARY KEY,
      tenant_id       text NOT NULL,
      destination_id  text NOT NULL,
      event_id        text NOT NULL,
      topic           text NOT NULL,
      status          text NOT NULL CHECK (status IN ('success', 'failed')),
      code            text NOT NULL,
      response_data   jsonb,
      attempt_number  integer NOT NULL,
      manual          boolean NOT NULL DEFAULT false,
      time            timestamptz NOT NULL,
      duration_ms     integer NOT NULL DEFAULT 0,
      final           boolean NOT NULL DEFAULT true
    );
    CREATE INDEX attempts_destination_time ON attempts (tenant_id, destination_id, time DESC, id DESC);
    CREATE INDEX attempts_event ON attempts (tenant_id, event_id, destination_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS attempts, deliveries, events, destinations, tenants');
}
