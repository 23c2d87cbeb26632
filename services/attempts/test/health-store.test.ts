// Consecutive failures per destination (health-store.ts) and the alerts they raise (alerts.ts), on a
// real database (Postgres, and PGlite as embedded mode runs it): batches of attempts interleaving
// failures and successes, as a destination failing now and then under load produces them. An alert
// describes the run of failures that reached the threshold, never the state the batch ended in.
import t, { type Test } from 'tap';
import { uuidv7 } from '@switchyard/shared/ids.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { AttemptRecord, OperatorEvent } from '@switchyard/shared/model/index.ts';
import { onBothDatabases } from '@switchyard/shared/testing/databases.ts';
import { createAlerts } from '../src/alerts.ts';
import { HealthStore } from '../src/health-store.ts';

const THRESHOLD = 3;

/** Attempts of one destination, a second apart, from a pattern: F failed (503), S success. */
function attempts(destination_id: string, pattern: string, from: number): AttemptRecord[] {
  return [...pattern].map((c, i): AttemptRecord => {
    const failed = c === 'F';
    return {
      id: `${destination_id}-${from + i}`,
      tenant_id: 'acme',
      destination_id,
      destination_type: 'webhook',
      event_id: uuidv7(),
      topic: 'order.paid',
      event_time: new Date(Date.UTC(2026, 0, 1)).toISOString(),
      event_received_at: new Date(Date.UTC(2026, 0, 1)).toISOString(),
      time: new Date(Date.UTC(2026, 0, 1, 0, 0, from + i)).toISOString(),
      attempt_number: 1,
      manual: false,
      status: failed ? 'failed' : 'success',
      code: failed ? '503' : '200',
      final: !failed,
      next_attempt_at: null,
      duration_ms: 5,
      response_data: null,
    };
  });
}

function alertsOf() {
  const emitted: OperatorEvent[] = [];
  const onHealth = createAlerts({
    threshold: THRESHOLD,
    autoDisable: false,
    disable: async () => false,
    emit: async (events) => void emitted.push(...events),
    log: createLogger('test', 'silent'),
  });
  return { onHealth, emitted };
}

onBothDatabases(t, 'an alert describes the run that reached the threshold, not the end of its batch', async (t: Test, db) => {
  const health = new HealthStore(db);
  const { onHealth, emitted } = alertsOf();
  const describe = () =>
    emitted.map((e) => [e.destination_id, e.data.consecutive_failures, e.data.last_attempt?.id, e.data.last_attempt?.status]);

  // One batch: a run of four failures (alerted at its third), then successes, then two failures.
  // Shuffled: the batch of several partitions comes in any order, the attempts' time decides.
  const batch = attempts('d1', 'SFFFFSSFF', 0);
  await onHealth(await health.apply([...batch].reverse(), THRESHOLD));
  t.same(describe(), [['d1', 4, 'd1-4', 'failed']], 'the run of four failures, ending in its last failed attempt');
  t.equal(
    (await db('destination_health').where({ destination_id: 'd1' }).first()).consecutive_failures,
    2,
    'the stored count is the state after the batch',
  );

  // The count goes on across batches: one more failure reaches the threshold, then a success.
  emitted.length = 0;
  await onHealth(await health.apply(attempts('d1', 'FS', 9), THRESHOLD));
  t.same(describe(), [['d1', 3, 'd1-9', 'failed']], 'a run begun in the batch before is counted whole');

  // Every tenth attempt failing never reaches the threshold; two runs in one batch are two alerts.
  emitted.length = 0;
  await onHealth(await health.apply(attempts('d2', 'SSSSSSSSSFSSSSSSSSSF', 0), THRESHOLD));
  await onHealth(await health.apply(attempts('d3', 'FFFSFFFFS', 0), THRESHOLD));
  t.same(
    describe(),
    [
      ['d3', 3, 'd3-2', 'failed'],
      ['d3', 4, 'd3-7', 'failed'],
    ],
    'one alert per run that reached it, none for scattered failures',
  );
  for (const e of emitted) {
    t.ok(e.data.consecutive_failures >= THRESHOLD, 'an alert never reports fewer failures than the threshold');
    t.equal(e.data.last_attempt?.status, 'failed', 'an alert never carries a successful attempt');
  }

  // Already past the threshold: more failures raise nothing new.
  emitted.length = 0;
  await onHealth(await health.apply(attempts('d4', 'FFF', 0), THRESHOLD));
  await onHealth(await health.apply(attempts('d4', 'FFS', 3), THRESHOLD));
  t.same(describe(), [['d4', 3, 'd4-2', 'failed']], 'alerted once for the run');
});
