// The delivery handler: delivering, and writing what came of it apart from the delivery.
import t from 'tap';
import type { AttemptRecord, DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { createDeliveryHandler } from '../src/handler.ts';
import { type Outcome, OwnFault, type Sender } from '../src/sender.ts';
import { deliveryRecord } from './records.ts';

const delivery = deliveryRecord();

/** A handler over a sender that answers `outcome`; its attempts fail to go out while `kafka.down`. */
function handlerWith(outcome: Outcome) {
  const kafka = { down: false };
  const emitted: AttemptRecord[] = [];
  const scheduled: Array<{ delivery: DeliveryRecord; dueAt: Date }> = [];
  const sender: Sender = { deliver: async () => outcome, close: async () => {} };
  const handle = createDeliveryHandler({
    senders: { webhook: sender },
    open: () => ({ credentials: {}, delivery_metadata: {} }),
    async emitAttempt(a) {
      if (kafka.down) throw new Error('kafka away');
      emitted.push(a);
    },
    async scheduleRetry(d, dueAt) {
      scheduled.push({ delivery: d, dueAt });
    },
    retry: { schedule: [], intervalSeconds: 5, maxRetries: 3, maxRetryAfterMs: 3_600_000 },
    timeoutMs: 1000,
  });
  return { handle, kafka, emitted, scheduled };
}

t.test('handling delivers and makes the attempt; nothing is written until write()', async (t) => {
  const { handle, emitted, scheduled } = handlerWith({ status: 'success', code: '200', response_data: null, retryable: false });
  const { attempt, write } = await handle(delivery);
  t.equal(attempt.status, 'success');
  t.ok(attempt.final, 'a success is final');
  t.same([emitted.length, scheduled.length], [0, 0], 'not written yet');
  await write();
  t.same(
    emitted.map((a) => a.id),
    [attempt.id],
  );
  t.equal(scheduled.length, 0, 'no retry after a success');
});

t.test('write() run again after a failure parks the retry once and emits the same attempt', async (t) => {
  const { handle, kafka, emitted, scheduled } = handlerWith({ status: 'failed', code: '503', response_data: null, retryable: true });
  const { attempt, write } = await handle(delivery);
  t.notOk(attempt.final, 'a retryable failure is followed by a retry');
  kafka.down = true;
  await t.rejects(write(), /kafka away/, 'our own fault is thrown, for the bus to retry in place');
  t.equal(scheduled.length, 1, 'the retry was parked before the attempt failed to go out');
  kafka.down = false;
  await write();
  t.equal(scheduled.length, 1, 'and is not parked a second time');
  t.equal(scheduled[0]?.delivery.attempt_number, 2);
  t.same(
    emitted.map((a) => a.id),
    [attempt.id],
    'the attempt went out once, with the id it was made with',
  );
});

t.test('our own fault is thrown (no attempt); anything else a sender throws is a failed attempt', async (t) => {
  const make = (err: Error) =>
    createDeliveryHandler({
      senders: { webhook: { deliver: async () => Promise.reject(err), close: async () => {} } },
      open: () => ({ credentials: {}, delivery_metadata: {} }),
      emitAttempt: async () => {},
      scheduleRetry: async () => {},
      retry: { schedule: [], intervalSeconds: 5, maxRetries: 3, maxRetryAfterMs: 3_600_000 },
      timeoutMs: 1000,
    });
  await t.rejects(make(new OwnFault('out of file descriptors'))(delivery), /out of file descriptors/, 'handled again later');
  const { attempt } = await make(new Error('a bug'))(delivery);
  t.match(attempt, { status: 'failed', code: 'ERR', response_data: { reason: 'sender_error', message: 'a bug' } });
});

t.test('an attempt is numbered after the last one stored; its retry counts on from its own number', async (t) => {
  const { handle, scheduled } = handlerWith({ status: 'failed', code: '503', response_data: null, retryable: true });
  // An automatic retry (its second attempt) made after a manual retry stored as attempt 2.
  const { attempt, write } = await handle({ ...delivery, attempt_number: 2 }, undefined, false, 2);
  t.equal(attempt.attempt_number, 3, 'after the manual one');
  await write();
  t.equal(scheduled[0]?.delivery.attempt_number, 3, 'the manual retry used none of the automatic retries');
  const own = await handle({ ...delivery, attempt_number: 4 }, undefined, false, 2);
  t.equal(own.attempt.attempt_number, 4, 'never below its own number');
});

t.test("an attempt's duration is the destination's answer time, not the reads before it", async (t) => {
  const handle = createDeliveryHandler({
    senders: {
      webhook: {
        deliver: async () => {
          await new Promise((r) => setTimeout(r, 50));
          return { status: 'success', code: '200', response_data: null, retryable: false };
        },
        close: async () => {},
      },
    },
    open: () => ({ credentials: {}, delivery_metadata: {} }),
    // The destination's state read slowly (a scheduled event's wait for its due time is such a read).
    current: async (s) => {
      await new Promise((r) => setTimeout(r, 1500));
      return { destination: s };
    },
    emitAttempt: async () => {},
    scheduleRetry: async () => {},
    retry: { schedule: [], intervalSeconds: 5, maxRetries: 3, maxRetryAfterMs: 3_600_000 },
    timeoutMs: 5000,
  });
  const { attempt } = await handle(delivery);
  t.ok(attempt.duration_ms >= 45, `${attempt.duration_ms} ms: the answer's time is in it`);
  t.ok(attempt.duration_ms < 1500, `${attempt.duration_ms} ms: the 1.5 s read before it is not`);
});
