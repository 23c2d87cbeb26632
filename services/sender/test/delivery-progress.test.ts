// A scheduled event's delivery reads what is stored of it before it is made, as a retry does: a manual
// retry (POST /retry) may have made it before it was due, in another process or before a restart,
// and then it is not made again. On Postgres, through the attempts service's own writes.
import t from 'tap';
import { PipelineStore } from '@switchyard/shared/db/stores/pipeline.ts';
import { newId } from '@switchyard/shared/ids.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { openTestDb } from '@switchyard/shared/testing/databases.ts';
import { createDeliveryProgress, isRetry } from '../src/delivery-progress.ts';
import { deliveryRecord } from './records.ts';

const RECEIVED = '2026-01-01T00:00:00.000Z';

const scheduled = (id: string): DeliveryRecord =>
  deliveryRecord({ event: { id, time: RECEIVED, received_at: RECEIVED, deliver_at: '2026-01-02T00:00:00.000Z' } });

t.test("a scheduled event's delivery that a manual retry made before it was due is not made again", async (t) => {
  const db = await openTestDb(t, 'Postgres');
  const progress = createDeliveryProgress(db, createLogger('test', 'silent'));
  const made = scheduled('e-made');
  t.ok(isRetry(made), 'its stored progress is read, as a retry’s is');
  // The manual retry's success, as the attempts service stores it.
  await new PipelineStore(db).storeAttempts([
    {
      id: newId(Date.parse('2026-01-01T00:00:05.000Z')),
      tenant_id: 't',
      destination_id: 'd1',
      destination_type: 'webhook',
      event_id: 'e-made',
      topic: 'x',
      event_time: RECEIVED,
      event_received_at: RECEIVED,
      status: 'success',
      code: '200',
      response_data: null,
      attempt_number: 1,
      manual: true,
      time: '2026-01-01T00:00:05.000Z',
      duration_ms: 3,
      final: true,
      next_attempt_at: null,
    },
  ]);
  t.same(await progress.read(made), { superseded: true, attempts: 1 }, 'superseded: no request, no attempt');
  const fresh = scheduled('e-not-made');
  const stored = await progress.read(fresh);
  t.same(stored, { superseded: false, attempts: 0 }, 'one nothing made yet is made');
  t.equal(progress.after(fresh, stored), 0, 'numbered 1');
  // Its number is handed out once its turn came: one more attempt a moment later counts past it.
  t.equal(progress.after(fresh, stored), 1, 'the next one numbered 2');
});

t.test('tries numbered elsewhere (an ordered drain) are counted past before they are stored', async (t) => {
  const db = await openTestDb(t, 'Postgres');
  const progress = createDeliveryProgress(db, createLogger('test', 'silent'));
  const blocked = { ...scheduled('e-drained'), manual: true, attempt_number: 2 };
  const stored = await progress.read(blocked);
  t.same(stored, { superseded: false, attempts: 0 }, 'none of its attempts stored yet');
  progress.tried(blocked, 3);
  progress.tried(blocked, 2);
  t.equal(progress.after(blocked, stored), 3, 'a manual retry asked for as 2 is numbered 4, after the drain’s 3');
});
