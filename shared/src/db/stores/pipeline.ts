import type { Knex } from 'knex';
import { escapeUnstorable, jsonTextUnstorable } from '../../events/storable.ts';
import type { AttemptRecord, RoutedRecord } from '../../model/index.ts';
import { statement } from '../statement.ts';

/**
 * A delivery row's key. created_at is the event's received time, so both writers (routed events and
 * attempts, in either order) name the same row, and the row lives in the partition of its event.
 */
const DELIVERY_KEY = '(tenant_id, event_id, destination_id, created_at)';

// Each write sends its whole batch as one JSON parameter that Postgres unpacks with
// json_to_recordset: a multi-row VALUES (one bind parameter per column and row, numbered by knex's
// query compiler) had knex at a fifth of the attempts service's CPU profile.
// A `json` column of the record keeps its text exactly as sent, so byte counts can be taken there.

const INSERT_EVENTS = statement(
  'insert_events',
  `
  INSERT INTO events (tenant_id, id, topic, time, metadata, data, payload_bytes, eligible_for_retry, destination_id,
                      received_at, matched_destination_ids, skipped_destination_ids, deliver_at)
  SELECT tenant_id, id, topic, time, metadata::jsonb, data::jsonb,
         -- What listings count against API_PAGE_MAX_BYTES (migration 005): the bytes of the JSON as published.
         octet_length(data::text) + coalesce(octet_length(metadata::text), 0),
         eligible_for_retry, destination_id, received_at, matched_destination_ids, skipped_destination_ids, deliver_at
  FROM json_to_recordset(?::json) AS r(tenant_id text, id text, topic text, time timestamptz, metadata json, data json,
       eligible_for_retry boolean, destination_id text, received_at timestamptz, matched_destination_ids text[],
       skipped_destination_ids text[], deliver_at timestamptz)
  ON CONFLICT DO NOTHING
  RETURNING tenant_id, topic, received_at`,
);

// The metrics API's per-minute counts (migration 006) of the rows just inserted.
const COUNT_EVENTS = statement(
  'count_events',
  `
  INSERT INTO event_counts AS c (tenant_id, minute, topic, count)
  SELECT tenant_id, date_trunc('minute', received_at, 'UTC'), topic, count(*)
  FROM json_to_recordset(?::json) AS r(tenant_id text, topic text, received_at timestamptz)
  GROUP BY 1, 2, 3
  ON CONFLICT (tenant_id, minute, topic) DO UPDATE SET count = c.count + EXCLUDED.count`,
);
const COUNT_ATTEMPTS = statement(
  'count_attempts',
  `
  WITH r AS (
    SELECT * FROM json_to_recordset(?::json) AS r(tenant_id text, time timestamptz, destination_id text, topic text, status text, code text)
  ), per_minute AS (
    INSERT INTO attempt_counts_minute AS c (tenant_id, minute, topic, status, code, count)
    SELECT tenant_id, date_trunc('minute', time, 'UTC'), topic, status, code, count(*) FROM r GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT (tenant_id, minute, topic, status, code) DO UPDATE SET count = c.count + EXCLUDED.count
  )
  INSERT INTO attempt_counts_hour AS c (tenant_id, hour, destination_id, topic, status, code, count)
  SELECT tenant_id, date_trunc('hour', time, 'UTC'), destination_id, topic, status, code, count(*) FROM r GROUP BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (tenant_id, hour, destination_id, topic, status, code) DO UPDATE SET count = c.count + EXCLUDED.count`,
);

const DELIVERY_COLUMNS = `tenant_id text, event_id text, destination_id text, topic text, event_time timestamptz,
       created_at timestamptz, status text`;

// An attempt may have been stored first; its status stands.
const INSERT_PENDING_DELIVERIES = statement(
  'insert_pending_deliveries',
  `
  INSERT INTO deliveries (tenant_id, event_id, destination_id, topic, event_time, created_at, status)
  SELECT * FROM json_to_recordset(?::json) AS r(${DELIVERY_COLUMNS})
  ON CONFLICT ${DELIVERY_KEY} DO NOTHING`,
);

const INSERT_ATTEMPTS = statement(
  'insert_attempts',
  `
  INSERT INTO attempts (id, tenant_id, destination_id, event_id, topic, status, code, response_data, attempt_number,
                        manual, time, duration_ms, final, event_received_at)
  SELECT id, tenant_id, destination_id, event_id, topic, status, code, response_data::jsonb, attempt_number,
         manual, time, duration_ms, final, event_received_at
  FROM json_to_recordset(?::json) AS r(id uuid, tenant_id text, destination_id text, event_id text, topic text,
       status text, code text, response_data json, attempt_number integer, manual boolean, time timestamptz,
       duration_ms integer, final boolean, event_received_at timestamptz)
  ON CONFLICT DO NOTHING
  RETURNING id`,
);

// The attempts whose event row is not stored yet, one probe of the events primary key per attempt.
// A lateral probe with LIMIT 1 holds the plan to that: as NOT EXISTS, the prepared statement's
// generic plan (100 rows guessed for the batch, today's partition not yet analyzed) became a hash
// anti join over a sequential scan of every event stored that day, 5.7 ms a call at 300 events/s
// and growing through the day (docs/performance.md, "Attempts service and Postgres"). Given the
// event's received_at (the partition key), the probe reads only that partition. Exported for the
// test of its plan.
export const MISSING_EVENTS = statement(
  'missing_events_at',
  `
  SELECT r.i FROM json_to_recordset(?::json) AS r(i integer, tenant_id text, event_id text, received_at timestamptz)
  LEFT JOIN LATERAL (
    SELECT true AS stored FROM events e
    WHERE e.tenant_id = r.tenant_id AND e.id = r.event_id AND e.received_at = r.received_at LIMIT 1
  ) e ON true
  WHERE e.stored IS NULL`,
);
// An attempt recorded before its event's received_at was carried (none since migration 003) has no
// partition key: its event is probed in every partition by tenant and id.
const MISSING_EVENTS_ANY_TIME = statement(
  'missing_events_any_time',
  `
  SELECT r.i FROM json_to_recordset(?::json) AS r(i integer, tenant_id text, event_id text)
  LEFT JOIN LATERAL (
    SELECT true AS stored FROM events e WHERE e.tenant_id = r.tenant_id AND e.id = r.event_id LIMIT 1
  ) e ON true
  WHERE e.stored IS NULL`,
);

// A success is never undone; counts and times only move forward.
const UPSERT_ATTEMPTED_DELIVERIES = statement(
  'upsert_attempted_deliveries',
  `
  INSERT INTO deliveries AS d (tenant_id, event_id, destination_id, topic, event_time, created_at, status, attempts,
                               last_attempt_at, successful_at, updated_at)
  SELECT tenant_id, event_id, destination_id, topic, event_time, created_at, status, attempts, last_attempt_at,
         successful_at, now()
  FROM json_to_recordset(?::json) AS r(${DELIVERY_COLUMNS}, attempts integer, last_attempt_at timestamptz,
       successful_at timestamptz)
  ON CONFLICT ${DELIVERY_KEY} DO UPDATE SET
    status = CASE WHEN d.successful_at IS NOT NULL THEN 'success' ELSE EXCLUDED.status END,
    attempts = GREATEST(d.attempts, EXCLUDED.attempts),
    last_attempt_at = GREATEST(d.last_attempt_at, EXCLUDED.last_attempt_at),
    successful_at = COALESCE(d.successful_at, EXCLUDED.successful_at),
    updated_at = EXCLUDED.updated_at`,
);

function deliveryRow(e: RoutedRecord['event'], destinationId: string, status: 'pending' | 'skipped') {
  return {
    tenant_id: e.tenant_id,
    event_id: e.id,
    destination_id: destinationId,
    topic: e.topic,
    event_time: e.time,
    created_at: e.received_at ?? e.time,
    status,
  };
}

/** An attempt row whose response_data can be stored (see storeAttempts). */
function storableResponse<R extends { response_data: Record<string, unknown> | null }>(row: R): R {
  if (row.response_data === null) return row;
  const { value, changed } = escapeUnstorable(row.response_data);
  return changed ? { ...row, response_data: { ...(value as Record<string, unknown>), escaped: true } } : row;
}

/**
 * The attempts service's writes: events (from routed records), the per-delivery status rows, and
 * attempts. Every write is one statement per batch and idempotent, so a redelivered batch changes
 * nothing; records of the two topics may arrive in either order and still converge.
 */
export class PipelineStore {
  private readonly db: Knex;
  constructor(db: Knex) {
    this.db = db;
  }

  async storeRouted(records: RoutedRecord[]): Promise<void> {
    if (!records.length) return;
    const events = records.map(({ event: e, matched_destination_ids, skipped_destination_ids }) => ({
      tenant_id: e.tenant_id,
      id: e.id,
      topic: e.topic,
      time: e.time,
      metadata: e.metadata ?? null,
      data: e.data,
      eligible_for_retry: e.eligible_for_retry,
      destination_id: e.destination_id ?? null,
      received_at: e.received_at ?? e.time,
      matched_destination_ids,
      skipped_destination_ids,
      deliver_at: e.deliver_at ?? null,
    }));
    const rows = records.flatMap(({ event: e, matched_destination_ids, skipped_destination_ids }) => [
      ...matched_destination_ids.map((d) => deliveryRow(e, d, 'pending')),
      ...skipped_destination_ids.map((d) => deliveryRow(e, d, 'skipped')),
    ]);
    await this.db.transaction(async (tx) => {
      const inserted = (await INSERT_EVENTS.run(tx, [JSON.stringify(events)])).rows as unknown[];
      if (inserted.length) await COUNT_EVENTS.run(tx, [JSON.stringify(inserted)]);
      if (rows.length) await INSERT_PENDING_DELIVERIES.run(tx, [JSON.stringify(rows)]);
    });
  }

  /**
   * The attempts whose event row is not stored yet. Attempts and routed events come from two topics
   * consumed apart, so an attempt can be ready first; the attempts service holds such attempts back
   * until their event is stored, so no attempt is listed without its event. One statement per
   * batch: a primary-key probe per attempt in its event's partition (event_received_at is the
   * partition key), and a second statement for attempts recorded without it.
   */
  async missingEvents(attempts: AttemptRecord[]): Promise<AttemptRecord[]> {
    const at: Array<{ i: number; tenant_id: string; event_id: string; received_at: string }> = [];
    const anyTime: Array<{ i: number; tenant_id: string; event_id: string }> = [];
    attempts.forEach((a, i) => {
      if (a.event_received_at) at.push({ i, tenant_id: a.tenant_id, event_id: a.event_id, received_at: a.event_received_at });
      else anyTime.push({ i, tenant_id: a.tenant_id, event_id: a.event_id });
    });
    const missing: number[] = [];
    for (const [keys, probe] of [
      [at, MISSING_EVENTS],
      [anyTime, MISSING_EVENTS_ANY_TIME],
    ] as const) {
      if (!keys.length) continue;
      const { rows } = (await probe.run(this.db, [JSON.stringify(keys)])) as { rows: Array<{ i: number }> };
      for (const r of rows) missing.push(r.i);
    }
    return missing.sort((a, b) => a - b).map((i) => attempts[i] as AttemptRecord);
  }

  /** Stores attempts; returns those that were new (a redelivered attempt is not counted twice). */
  async storeAttempts(attempts: AttemptRecord[]): Promise<AttemptRecord[]> {
    if (!attempts.length) return [];
    return this.db.transaction(async (tx) => {
      const rows = attempts.map((a) => ({
        id: a.id,
        tenant_id: a.tenant_id,
        destination_id: a.destination_id,
        event_id: a.event_id,
        topic: a.topic,
        status: a.status,
        code: a.code,
        response_data: a.response_data ?? null,
        attempt_number: a.attempt_number,
        manual: a.manual,
        time: a.time,
        duration_ms: a.duration_ms,
        final: a.final,
        event_received_at: a.event_received_at || null,
      }));
      let text = JSON.stringify(rows);
      // A destination's answer may hold what Postgres cannot store (NUL, a lone surrogate): such a
      // response is stored with those characters written as \u escapes, and `escaped: true` says so.
      if (jsonTextUnstorable(text)) text = JSON.stringify(rows.map(storableResponse));
      const inserted = (await INSERT_ATTEMPTS.run(tx, [text])).rows as Array<{ id: string }>;
      const fresh = new Set(inserted.map((r) => r.id));
      const added = attempts.filter((a) => fresh.has(a.id));
      // Latest attempt per delivery within the batch decides; a success is never undone.
      const latest = new Map<string, AttemptRecord>();
      // The first success in the batch per delivery (a map: a lookup per row was quadratic in the batch).
      const succeededAt = new Map<string, string>();
      for (const a of added) {
        const k = `${a.tenant_id}\u0000${a.event_id}\u0000${a.destination_id}`;
        const cur = latest.get(k);
        if (!cur || a.time >= cur.time) latest.set(k, a);
        if (a.status === 'success' && !succeededAt.has(k)) succeededAt.set(k, a.time);
      }
      const deliveries = [...latest.entries()].map(([k, a]) => ({
        tenant_id: a.tenant_id,
        event_id: a.event_id,
        destination_id: a.destination_id,
        topic: a.topic,
        event_time: a.event_time,
        created_at: a.event_received_at,
        status: succeededAt.has(k) ? 'success' : a.status,
        attempts: a.attempt_number,
        last_attempt_at: a.time,
        successful_at: succeededAt.get(k) ?? null,
      }));
      if (deliveries.length) await UPSERT_ATTEMPTED_DELIVERIES.run(tx, [JSON.stringify(deliveries)]);
      const counted = added.map(({ tenant_id, time, destination_id, topic, status, code }) => ({
        tenant_id,
        time,
        destination_id,
        topic,
        status,
        code,
      }));
      if (counted.length) await COUNT_ATTEMPTS.run(tx, [JSON.stringify(counted)]);
      return added;
    });
  }
}
