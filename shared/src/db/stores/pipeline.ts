import type { Knex } from 'knex';
import type { AttemptRecord, RoutedRecord } from '../../model/index.ts';

/**
 * A delivery row's key. created_at is the event's received time, so both writers (routed events and
 * attempts, in either order) name the same row, and the row lives in the partition of its event.
 */
const DELIVERY_KEY = ['tenant_id', 'event_id', 'destination_id', 'created_at'];

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
    await this.db.transaction(async (tx) => {
      await tx('events')
        .insert(
          records.map(({ event: e, matched_destination_ids, skipped_destination_ids }) => {
            const metadata = e.metadata ? JSON.stringify(e.metadata) : null;
            const data = JSON.stringify(e.data);
            return {
              tenant_id: e.tenant_id,
              id: e.id,
              topic: e.topic,
              time: e.time,
              metadata,
              data,
              // What listings count against API_PAGE_MAX_BYTES (migration 005).
              payload_bytes: Buffer.byteLength(data) + (metadata === null ? 0 : Buffer.byteLength(metadata)),
              eligible_for_retry: e.eligible_for_retry,
              destination_id: e.destination_id ?? null,
              received_at: e.received_at ?? e.time,
              matched_destination_ids: matched_destination_ids,
              skipped_destination_ids: skipped_destination_ids,
            };
          }),
        )
        .onConflict()
        .ignore();
      const rows = records.flatMap(({ event: e, matched_destination_ids, skipped_destination_ids }) => [
        ...matched_destination_ids.map((d) => deliveryRow(e, d, 'pending')),
        ...skipped_destination_ids.map((d) => deliveryRow(e, d, 'skipped')),
      ]);
      if (rows.length) {
        // An attempt may have been stored first; its status stands.
        await tx('deliveries').insert(rows).onConflict(DELIVERY_KEY).ignore();
      }
    });
  }

  /** Stores attempts; returns those that were new (a redelivered attempt is not counted twice). */
  async storeAttempts(attempts: AttemptRecord[]): Promise<AttemptRecord[]> {
    if (!attempts.length) return [];
    return this.db.transaction(async (tx) => {
      const inserted = (await tx('attempts')
        .insert(
          attempts.map((a) => ({
            id: a.id,
            tenant_id: a.tenant_id,
            destination_id: a.destination_id,
            event_id: a.event_id,
            topic: a.topic,
            status: a.status,
            code: a.code,
            response_data: a.response_data ? JSON.stringify(a.response_data) : null,
            attempt_number: a.attempt_number,
            manual: a.manual,
            time: a.time,
            duration_ms: a.duration_ms,
            final: a.final,
            event_received_at: a.event_received_at || null,
          })),
        )
        .onConflict()
        .ignore()
        .returning('id')) as Array<{ id: string }>;
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
      const rows = [...latest.entries()].map(([k, a]) => ({
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
        updated_at: tx.fn.now(),
      }));
      if (rows.length) {
        await tx('deliveries')
          .insert(rows)
          .onConflict(DELIVERY_KEY)
          .merge({
            status: tx.raw("CASE WHEN deliveries.successful_at IS NOT NULL THEN 'success' ELSE EXCLUDED.status END"),
            attempts: tx.raw('GREATEST(deliveries.attempts, EXCLUDED.attempts)'),
            last_attempt_at: tx.raw('GREATEST(deliveries.last_attempt_at, EXCLUDED.last_attempt_at)'),
            successful_at: tx.raw('COALESCE(deliveries.successful_at, EXCLUDED.successful_at)'),
            updated_at: tx.raw('EXCLUDED.updated_at'),
          });
      }
      return added;
    });
  }
}
