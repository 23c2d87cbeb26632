import type { EventRecord } from '@switchyard/shared/model/index.ts';

/**
 * An events row as a delivery record carries the event: what a manual retry and a replay deliver
 * again. No deliver_at: a delivery made again is due now.
 */
export function storedEvent(row: Record<string, unknown>): EventRecord {
  return {
    id: String(row.id),
    tenant_id: String(row.tenant_id),
    topic: String(row.topic),
    time: (row.time as Date).toISOString(),
    eligible_for_retry: Boolean(row.eligible_for_retry),
    metadata: (row.metadata as EventRecord['metadata']) ?? null,
    data: row.data as EventRecord['data'],
    destination_id: (row.destination_id as string | null) ?? null,
    received_at: (row.received_at as Date).toISOString(),
  };
}
