import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- Destination health as the API shows it (docs/operations.md): when the destination last
    -- succeeded and failed, and with what code. auto_disabled_at is the disabled_at the attempts
    -- service set when it disabled the destination after consecutive failures: while the
    -- destination's disabled_at still equals it, the reason it is disabled is those failures.
    -- Nullable columns without defaults: adding them rewrites nothing.
    ALTER TABLE destination_health
      ADD COLUMN last_success_at timestamptz,
      ADD COLUMN last_failure_at timestamptz,
      ADD COLUMN last_failure_code text,
      ADD COLUMN auto_disabled_at timestamptz;

    -- Operator events (alerts, auto-disables), listable through the API; the operator-events topic
    -- and the optional callback carry the same records. Few rows: one per threshold crossing.
    CREATE TABLE operator_events (
      tenant_id       text NOT NULL,
      id              text NOT NULL,
      destination_id  text NOT NULL,
      type            text NOT NULL,
      time            timestamptz NOT NULL,
      data            jsonb NOT NULL,
      PRIMARY KEY (tenant_id, id)
    );
    CREATE INDEX operator_events_tenant_time ON operator_events (tenant_id, time, id);
    CREATE INDEX operator_events_time ON operator_events (time, id);

    -- Counts for the metrics API (GET .../metrics/attempts and .../metrics/events), kept by the
    -- attempts service in the transaction that stores the rows they count (only rows new to the
    -- database are counted, so a redelivered batch adds nothing). Two grains keep a day's query to
    -- a few thousand rows whatever the traffic: per minute without the destination, per hour with it.
    CREATE TABLE attempt_counts_minute (
      tenant_id  text NOT NULL,
      minute     timestamptz NOT NULL,
      topic      text NOT NULL,
      status     text NOT NULL,
      code       text NOT NULL,
      count      bigint NOT NULL,
      PRIMARY KEY (tenant_id, minute, topic, status, code)
    );
    CREATE INDEX attempt_counts_minute_time ON attempt_counts_minute (minute);
    CREATE TABLE attempt_counts_hour (
      tenant_id       text NOT NULL,
      hour            timestamptz NOT NULL,
      destination_id  text NOT NULL,
      topic           text NOT NULL,
      status          text NOT NULL,
      code            text NOT NULL,
      count           bigint NOT NULL,
      PRIMARY KEY (tenant_id, hour, destination_id, topic, status, code)
    );
    CREATE INDEX attempt_counts_hour_time ON attempt_counts_hour (hour);
    CREATE TABLE event_counts (
      tenant_id  text NOT NULL,
      minute     timestamptz NOT NULL,
      topic      text NOT NULL,
      count      bigint NOT NULL,
      PRIMARY KEY (tenant_id, minute, topic)
    );
    CREATE INDEX event_counts_minute ON event_counts (minute);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS operator_events, attempt_counts_minute, attempt_counts_hour, event_counts;
    ALTER TABLE destination_health
      DROP COLUMN last_success_at, DROP COLUMN last_failure_at, DROP COLUMN last_failure_code, DROP COLUMN auto_disabled_at;
  `);
}
