import type { Knex } from '@switchyard/shared/db/index.ts';
import type { AttemptRecord } from '@switchyard/shared/model/index.ts';

export interface HealthChange {
  tenant_id: string;
  destination_id: string;
  consecutive_failures: number;
  /** This batch took the count to the threshold (or past it) from below. */
  crossed: boolean;
  last: AttemptRecord;
}

/** Consecutive failed attempts per destination; the attempts topic is keyed by destination, so one writer each. */
export class HealthStore {
  private readonly db: Knex;
  constructor(db: Knex) {
    this.db = db;
  }

  async apply(all: AttemptRecord[], threshold: number): Promise<HealthChange[]> {
    // A canceled attempt reached no destination: it says nothing of its health.
    const attempts = all.filter((a) => a.status !== 'canceled');
    if (!attempts.length) return [];
    const byDest = Map.groupBy(attempts, (a) => `${a.tenant_id}\u0000${a.destination_id}`);
    const keys = [...byDest.values()].map((l) => [(l[0] as AttemptRecord).tenant_id, (l[0] as AttemptRecord).destination_id]);
    const current = (await this.db('destination_health')
      .whereIn(['tenant_id', 'destination_id'], keys)
      .select('tenant_id', 'destination_id', 'consecutive_failures')) as Array<{
      tenant_id: string;
      destination_id: string;
      consecutive_failures: number;
    }>;
    const before = new Map(current.map((r) => [`${r.tenant_id}\u0000${r.destination_id}`, r.consecutive_failures]));
    const changes: HealthChange[] = [];
    for (const [k, list] of byDest) {
      const ordered = [...list].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
      const start = before.get(k) ?? 0;
      let count = start;
      for (const a of ordered) count = a.status === 'success' ? 0 : count + 1;
      const last = ordered.at(-1) as AttemptRecord;
      // Crossed when the count reached the threshold at some point of this batch, coming from below.
      let running = start;
      let crossed = false;
      for (const a of ordered) {
        const prev = running;
        running = a.status === 'success' ? 0 : running + 1;
        if (prev < threshold && running >= threshold) crossed = true;
      }
      changes.push({ tenant_id: last.tenant_id, destination_id: last.destination_id, consecutive_failures: count, crossed, last });
    }
    // The newest success and failure of each destination in this batch.
    const lastOf = (c: HealthChange, status: string) =>
      byDest
        .get(`${c.tenant_id}\u0000${c.destination_id}`)
        ?.filter((a) => a.status === status)
        .reduce<AttemptRecord | undefined>((m, a) => (!m || a.time > m.time ? a : m), undefined);
    await this.db('destination_health')
      .insert(
        changes.map((c) => ({
          tenant_id: c.tenant_id,
          destination_id: c.destination_id,
          consecutive_failures: c.consecutive_failures,
          last_attempt_at: c.last.time,
          last_success_at: lastOf(c, 'success')?.time ?? null,
          last_failure_at: lastOf(c, 'failed')?.time ?? null,
          last_failure_code: lastOf(c, 'failed')?.code ?? null,
        })),
      )
      .onConflict(['tenant_id', 'destination_id'])
      .merge({
        consecutive_failures: this.db.raw('excluded.consecutive_failures'),
        last_attempt_at: this.db.raw('excluded.last_attempt_at'),
        last_success_at: this.db.raw('coalesce(excluded.last_success_at, destination_health.last_success_at)'),
        last_failure_at: this.db.raw('coalesce(excluded.last_failure_at, destination_health.last_failure_at)'),
        last_failure_code: this.db.raw('coalesce(excluded.last_failure_code, destination_health.last_failure_code)'),
      });
    return changes;
  }
}
