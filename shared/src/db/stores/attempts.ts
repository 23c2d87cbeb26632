import type { Knex } from 'knex';
import type { AttemptRecord, EventRecord } from '../../model/index.ts';

export interface AttemptView {
  id: string;
  tenant_id: string;
  destination_id: string;
  event_id: string;
  topic: string;
  status: 'success' | 'failed';
  code: string;
  response_data: Record<string, unknown> | null;
  attempt_number: number;
  manual: boolean;
  time: string;
}

/** Events and attempts as stored for querying. Writes are batched and idempotent. */
export class AttemptStore {
  private readonly db: Knex;
  constructor(db: Knex) {
    this.db = db;
  }

  /** A redelivered record hits the primary key and is ignored, never duplicated. */
  async insertEvents(events: EventRecord[]): Promise<void> {
    if (!events.length) return;
    await this.db('events')
      .insert(
        events.map((e) => ({
          tenant_id: e.tenant_id,
          id: e.id,
          topic: e.topic,
          time: e.time,
          metadata: e.metadata ? JSON.stringify(e.metadata) : null,
          data: JSON.stringify(e.data),
          eligible_for_retry: e.eligible_for_retry,
          destination_id: e.destination_id ?? null,
        })),
      )
      .onConflict()
      .ignore();
  }

  async insertAttempts(attempts: AttemptRecord[]): Promise<void> {
    if (!attempts.length) return;
    await this.db('attempts')
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
        })),
      )
      .onConflict()
      .ignore();
  }
}
