// The scheduled backlog gauge (scheduled-backlog.ts): events whose deliver_at is ahead and that were
// not canceled, on a real database (Postgres, and PGlite as embedded mode runs it), read through
// /metrics' registry as a scrape does; 0 where no attempts service reports it.
import t, { type Test } from 'tap';
import { registry } from '@switchyard/shared/metrics.ts';
import { onBothDatabases } from '@switchyard/shared/testing/databases.ts';
import { countScheduled, reportScheduledBacklog } from '../src/scheduled-backlog.ts';

const scraped = async () => {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === 'switchyard_scheduled_events');
  return (m?.values as Array<{ value: number }> | undefined)?.map((v) => v.value) ?? [];
};

onBothDatabases(t, 'events still ahead and not canceled are the backlog', async (t: Test, db) => {
  const event = (id: string, deliverAt: string | null) => ({
    tenant_id: 'acme',
    id,
    topic: 'user.created',
    time: new Date(),
    data: JSON.stringify({ id }),
    deliver_at: deliverAt === null ? null : db.raw(`now() + interval '${deliverAt}'`),
  });
  await db('events').insert([
    event('plain', null),
    event('past', '-1 minute'),
    event('soon', '1 hour'),
    event('later', '2 days'),
    event('canceled', '1 hour'),
  ]);
  await db('event_cancellations').insert({ tenant_id: 'acme', event_id: 'canceled' });
  t.equal(await countScheduled(db), 2, 'soon and later; not the past, unscheduled or canceled ones');

  t.same(await scraped(), [0], '0 where the attempts service does not report it (take max across processes)');
  const stop = reportScheduledBacklog(db);
  t.same(await scraped(), [2], 'a scrape reads the count');
  await db('event_cancellations').insert({ tenant_id: 'acme', event_id: 'soon' });
  t.same(await scraped(), [1], 'a cancel leaves the backlog at the next scrape');
  stop();
  t.same(await scraped(), [0], '0 once stopped');
});
