import type { Knex } from '@switchyard/shared/db/index.ts';
import type { AttemptRecord } from '@switchyard/shared/model/index.ts';
import { statement } from '@switchyard/shared/db/statement.ts';

/** A run of consecutive failures that reached the threshold, as far as one batch saw it. */
export interface FailureRun {
  /** Failures in a row through `last` (at least the threshold). */
  consecutive_failures: number;
  /** The run's latest failed attempt. */
  last: AttemptRecord;
}

export interface HealthChange {
  tenant_id: string;
  destination_id: string;
  /** The count after the batch (0 when it ended with a success). */
  consecutive_failures: number;
  /**
   * The runs of this batch that took the count to the threshold from below, each described by
   * itself: a success later in the batch ends a run without changing what it was.
   */
  runs: FailureRun[];
  /** The batch's latest attempt of the destination. */
  last: AttemptRecord;
}

// A batch's destinations go to Postgres as one JSON parameter (json_to_recordset), as the pipeline
// store's writes do: a composite IN list and a multi-row VALUES, one bind parameter per column and
// destination, had knex compiling a statement as long as the batch (db/stores/pipeline.ts).
const SELECT_HEALTH = statement(
  'select_health',
  `
  SELECT h.tenant_id, h.destination_id, h.consecutive_failures
  FROM json_to_recordset(?::json) AS k(tenant_id text, destination_id text)
  JOIN destination_health h ON h.tenant_id = k.tenant_id AND h.destination_id = k.destination_id`,
);
const UPSERT_HEALTH = statement(
  'upsert_health',
  `
  INSERT INTO destination_health (tenant_id, destination_id, consecutive_failures, last_attempt_at,
                                  last_success_at, last_failure_at, last_failure_code)
  SELECT * FROM json_to_recordset(?::json) AS r(tenant_id text, destination_id text, consecutive_failures integer,
       last_attempt_at timestamptz, last_success_at timestamptz, last_failure_at timestamptz, last_failure_code text)
  ON CONFLICT (tenant_id, destination_id) DO UPDATE SET
    consecutive_failures = excluded.consecutive_failures,
    last_attempt_at = excluded.last_attempt_at,
    last_success_at = coalesce(excluded.last_success_at, destination_health.last_success_at),
    last_failure_at = coalesce(excluded.last_failure_at, destination_health.last_failure_at),
    last_failure_code = coalesce(excluded.last_failure_code, destination_health.last_failure_code)`,
);

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
    const keys = [...byDest.values()].map((l) => ({
      tenant_id: (l[0] as AttemptRecord).tenant_id,
      destination_id: (l[0] as AttemptRecord).destination_id,
    }));
    const { rows: current } = (await SELECT_HEALTH.run(this.db, [JSON.stringify(keys)])) as {
      rows: Array<{ tenant_id: string; destination_id: string; consecutive_failures: number }>;
    };
    const before = new Map(current.map((r) => [`${r.tenant_id}\u0000${r.destination_id}`, r.consecutive_failures]));
    const changes: HealthChange[] = [];
    for (const [k, list] of byDest) {
      const ordered = [...list].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
      let count = before.get(k) ?? 0;
      const runs: FailureRun[] = [];
      // The run that crossed the threshold in this batch and has not ended yet, if any.
      let run: FailureRun | null = null;
      for (const a of ordered) {
        if (a.status === 'success') {
          count = 0;
          run = null;
          continue;
        }
        count++;
        if (run) {
          run.consecutive_failures = count;
          run.last = a;
        } else if (count === threshold) {
          run = { consecutive_failures: count, last: a };
          runs.push(run);
        }
      }
      const last = ordered.at(-1) as AttemptRecord;
      changes.push({ tenant_id: last.tenant_id, destination_id: last.destination_id, consecutive_failures: count, runs, last });
    }
    // The newest success and failure of each destination in this batch.
    const lastOf = (c: HealthChange, status: string) =>
      byDest
        .get(`${c.tenant_id}\u0000${c.destination_id}`)
        ?.filter((a) => a.status === status)
        .reduce<AttemptRecord | undefined>((m, a) => (!m || a.time > m.time ? a : m), undefined);
    await UPSERT_HEALTH.run(this.db, [
      JSON.stringify(
        changes.map((c) => ({
          tenant_id: c.tenant_id,
          destination_id: c.destination_id,
          consecutive_failures: c.consecutive_failures,
          last_attempt_at: c.last.time,
          last_success_at: lastOf(c, 'success')?.time ?? null,
          last_failure_at: lastOf(c, 'failed')?.time ?? null,
          last_failure_code: lastOf(c, 'failed')?.code ?? null,
        })),
      ),
    ]);
    return changes;
  }
}
