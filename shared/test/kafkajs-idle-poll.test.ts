// kafkajs's request queue no longer re-arms a 1 ms check when nothing is pending, and still
// schedules one when something is (shared/src/kafka/kafkajs/idle-poll.ts).
import t from 'tap';
import { RequestQueue, type RequestQueueInternals } from '../src/kafka/kafkajs/idle-poll.ts';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
function queue(t: { teardown(fn: () => void): void }): RequestQueueInternals {
  const q = new RequestQueue({
    maxInFlightRequests: null,
    requestTimeout: 30_000,
    enforceRequestTimeout: true,
    clientId: 'test',
    broker: '127.0.0.1:9092',
    logger: quiet,
  });
  t.teardown(() => q.destroy());
  return q;
}

t.test('with nothing pending, a check arms no timer', async (t) => {
  const q = queue(t);
  q.checkPendingRequests(); // what kafkajs does after every response
  t.equal(q.throttleCheckTimeoutId, null, 'no timer: the idle connection stays idle');
  q.throttledUntil = Date.now() + 1000; // a broker throttle with nothing waiting behind it
  q.checkPendingRequests();
  t.equal(q.throttleCheckTimeoutId, null);
});

t.test('with a request pending, the check is still scheduled', async (t) => {
  const q = queue(t);
  q.maxInFlightRequests = 0; // the in-flight limit reached: the request has to wait
  q.pending.push({});
  q.scheduleCheckPendingRequests();
  t.not(q.throttleCheckTimeoutId, null, 'retried after the in-flight limit frees up');
  q.pending.length = 0; // destroy() would reject what is pending
});

t.test('a throttled queue with a request pending is checked when the throttle ends', async (t) => {
  const q = queue(t);
  q.throttledUntil = Date.now() + 50;
  q.pending.push({});
  q.scheduleCheckPendingRequests();
  t.not(q.throttleCheckTimeoutId, null);
  q.pending.length = 0;
});
