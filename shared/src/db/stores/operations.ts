import type { Knex } from 'knex';
import type { OperatorEvent } from '../../model/index.ts';
import { type ListPage, type Page, paginate } from '../paging.ts';

/** A destination's health as the API shows it (GET .../destinations/{id}/health). */
export interface DestinationHealth {
  destination_id: string;
  consecutive_failures: number;
  last_attempt_at: string | null;
  last_success_at: string | null;
  last_failure_at: string | null;
  last_failure_code: string | null;
  disabled_at: string | null;
  /** Why it is disabled: consecutive_failures (auto-disabled by the attempts service) or manual; null when enabled. */
  disabled_reason: 'consecutive_failures' | 'manual' | null;
}

interface HealthRow {
  id: string;
  disabled_at: Date | null;
  consecutive_failures: number | null;
  last_attempt_at: Date | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  last_failure_code: string | null;
  auto_disabled_at: Date | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * Operator events (alerts, auto-disables) and destination health, for the API and the attempts
 * service (the metrics API's counts are the gateway's: services/gateway/src/queries/metrics.ts).
 */
export class OperationsStore {
  private readonly db: Knex;
  constructor(db: Knex) {
    this.db = db;
  }

  /** Stores operator events; a repeat of an id is ignored. */
  async addEvents(events: OperatorEvent[]): Promise<void> {
    if (!events.length) return;
    await this.db('operator_events')
      .insert(
        events.map((e) => ({
          tenant_id: e.tenant_id,
          id: e.id,
          destination_id: e.destination_id,
          type: e.type,
          time: e.time,
          data: JSON.stringify(e.data),
        })),
      )
      .onConflict(['tenant_id', 'id'])
      .ignore();
  }

  /**
   * Disables a destination for its consecutive failures, recording why; false when it was already
   * disabled or is gone.
   */
  async autoDisable(tenantId: string, destinationId: string): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const rows = (await trx('destinations')
        .where({ tenant_id: tenantId, id: destinationId })
        .whereNull('disabled_at')
        .update({ disabled_at: trx.fn.now(), updated_at: trx.fn.now() })
        .returning('disabled_at')) as Array<{ disabled_at: Date }>;
      const at = rows[0]?.disabled_at;
      if (!at) return false;
      await trx('destination_health')
        .insert({ tenant_id: tenantId, destination_id: destinationId, auto_disabled_at: at })
        .onConflict(['tenant_id', 'destination_id'])
        .merge(['auto_disabled_at']);
      return true;
    });
  }

  /** Operator events newest first (or oldest with dir=asc); all tenants' when `tenantId` is null. */
  async listEvents(
    tenantId: string | null,
    filter: { type?: string[] | undefined; destinationId?: string | undefined },
    page: ListPage,
  ): Promise<Page<OperatorEvent>> {
    const q = this.db('operator_events').select('id', 'type', 'time', 'tenant_id', 'destination_id', 'data');
    if (tenantId !== null) q.where('tenant_id', tenantId);
    if (filter.type) q.whereIn('type', filter.type);
    if (filter.destinationId) q.where('destination_id', filter.destinationId);
    const res = await paginate<OperatorEvent & { time: Date | string }>(this.db, q, {
      ...page,
      kind: 'op',
      column: 'time',
      idColumn: 'id',
      orderBy: 'time',
    });
    return {
      models: res.models.map((r) => ({ ...r, time: new Date(r.time).toISOString() })),
      pagination: res.pagination,
    };
  }

  /** The health of one destination; undefined when it does not exist. */
  async health(tenantId: string, destinationId: string): Promise<DestinationHealth | undefined> {
    const row = (await this.db('destinations as d')
      .leftJoin('destination_health as h', (j) => j.on('h.tenant_id', 'd.tenant_id').andOn('h.destination_id', 'd.id'))
      .where({ 'd.tenant_id': tenantId, 'd.id': destinationId })
      .first(
        'd.id',
        'd.disabled_at',
        'h.consecutive_failures',
        'h.last_attempt_at',
        'h.last_success_at',
        'h.last_failure_at',
        'h.last_failure_code',
        'h.auto_disabled_at',
      )) as HealthRow | undefined;
    if (!row) return undefined;
    const auto = row.disabled_at && row.auto_disabled_at && row.disabled_at.getTime() === row.auto_disabled_at.getTime();
    return {
      destination_id: row.id,
      consecutive_failures: row.consecutive_failures ?? 0,
      last_attempt_at: iso(row.last_attempt_at),
      last_success_at: iso(row.last_success_at),
      last_failure_at: iso(row.last_failure_at),
      last_failure_code: row.last_failure_code,
      disabled_at: iso(row.disabled_at),
      disabled_reason: row.disabled_at ? (auto ? 'consecutive_failures' : 'manual') : null,
    };
  }
}
