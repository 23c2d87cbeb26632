// The scheduled backlog on /metrics (`switchyard_scheduled_events`): events whose deliver_at is still
// ahead and that were not canceled, counted at each scrape through the partial index on deliver_at.
// The attempts service reports it, since it is the one service every deployment runs with the
// database (as embedded mode's one process does).
import type { Knex } from '@switchyard/shared/db/index.ts';
import { watchScheduledBacklog } from '@switchyard/shared/metrics.ts';

export async function countScheduled(db: Knex): Promise<number> {
  const row = (await db('events as e')
    .where('e.deliver_at', '>', db.fn.now())
    .whereNotExists(db('event_cancellations as c').whereRaw('c.tenant_id = e.tenant_id AND c.event_id = e.id'))
    .count<{ n: string | number }[]>({ n: '*' })
    .first()) as { n: string | number } | undefined;
  return Number(row?.n ?? 0);
}

/** Reports the backlog from `db` until the returned stop is called. */
export function reportScheduledBacklog(db: Knex): () => void {
  watchScheduledBacklog(() => countScheduled(db));
  return () => watchScheduledBacklog(null);
}
