import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- Bytes of the event's data and metadata as JSON text, as the writer serialised them. Listings
    -- that return event data stop a page at API_PAGE_MAX_BYTES of these, reading this number rather
    -- than the payloads (which stay in TOAST until a row is sent). A nullable column without a
    -- default: adding it rewrites nothing. NULL on rows written before it existed; for those the
    -- readers measure the stored JSON instead (services/gateway/src/queries/events.ts, PAYLOAD_BYTES).
    ALTER TABLE events ADD COLUMN payload_bytes integer;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE events DROP COLUMN payload_bytes');
}
