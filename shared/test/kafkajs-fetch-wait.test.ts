// A batch-wait consumer's fetch waits for a fuller batch only while records come; after an empty
// fetch it long-polls; a delayed consumer long-polls while none of its partitions is paused
// (shared/src/kafka/kafkajs/fetch-wait.ts).
import t from 'tap';
import {
  adaptFetchWait,
  ConsumerGroup,
  type ConsumerGroupInternals,
  delayedFetchWait,
  IDLE_FETCH_WAIT_MS,
  nextFetchWait,
  startFetchMinBytes,
} from '../src/kafka/kafkajs/fetch-wait.ts';

const wait = { kind: 'batch' as const, minBytes: 1_048_576, maxWaitMs: 3, idleWaitMs: IDLE_FETCH_WAIT_MS };
const delayed = { kind: 'delayed' as const, minBytes: 1, maxWaitMs: 200, idleWaitMs: IDLE_FETCH_WAIT_MS };

t.test('after records the batch wait, after none a long poll answered by the first byte', async (t) => {
  t.same(nextFetchWait(wait, true), { minBytes: 1_048_576, maxWaitTime: 3 });
  t.same(nextFetchWait(wait, false), { minBytes: 1, maxWaitTime: IDLE_FETCH_WAIT_MS });
});

t.test('a consumer busy for its batch wait since its last fetch takes what is there at once', async (t) => {
  t.equal(startFetchMinBytes(wait, wait.minBytes, 2), wait.minBytes, 'handled within the wait: it waits for more');
  t.equal(startFetchMinBytes(wait, wait.minBytes, 3), 1, 'busy as long as the wait: no more waiting');
  t.equal(startFetchMinBytes(wait, 1, 0), 1, 'a long poll stays one');
});

t.test('a delayed consumer waits 200 ms while a partition is paused, else long-polls', async (t) => {
  t.equal(delayedFetchWait(delayed, true), 200);
  t.equal(delayedFetchWait(delayed, false), IDLE_FETCH_WAIT_MS);
});

/** A consumer group as kafkajs builds it, as far as fetch reads it: a fetch that fails comes back empty. */
const group = (groupId: string, paused: unknown[] = []) =>
  Object.assign(Object.create(ConsumerGroup.prototype) as ConsumerGroupInternals, {
    groupId,
    minBytes: wait.minBytes,
    maxWaitTime: wait.maxWaitMs,
    subscriptionState: { paused: () => paused },
    cluster: {
      refreshMetadataIfNecessary: async () => {
        throw new Error('no broker here');
      },
    },
    recoverFromFetch: async () => {},
  });

t.test("kafkajs's fetch is patched: an empty fetch turns an adapted group to the long poll, and only it", async (t) => {
  const adapted = group('adapted');
  const other = group('other');
  const stop = adaptFetchWait('adapted', wait);
  t.same(await adapted.fetch(0), [], 'the fetch came back empty');
  t.equal(adapted.maxWaitTime, IDLE_FETCH_WAIT_MS);
  t.equal(adapted.minBytes, 1);
  await other.fetch(0);
  t.equal(other.maxWaitTime, 3, 'a group that did not ask keeps its wait');
  stop();
  const after = group('adapted');
  await after.fetch(0);
  t.equal(after.maxWaitTime, 3, 'stopped at close');
});

t.test('the patched fetch starts without the wait when the group was busy since its last fetch', async (t) => {
  const stop = adaptFetchWait('busy', wait);
  const g = group('busy');
  const asked: number[] = [];
  const cluster = (g as unknown as { cluster: { refreshMetadataIfNecessary(): Promise<void> } }).cluster;
  cluster.refreshMetadataIfNecessary = async () => {
    asked.push(g.minBytes);
    throw new Error('no broker here');
  };
  await g.fetch(0);
  g.minBytes = wait.minBytes; // as after a fetch that brought records
  await new Promise((r) => setTimeout(r, 20));
  await g.fetch(0);
  t.same(asked, [wait.minBytes, 1], 'the first fetch waited for a batch; the one after 20 ms of work did not');
  stop();
});

t.test('a delayed group fetches with the short wait only while one of its partitions is paused', async (t) => {
  const stop = adaptFetchWait('tiers', delayed);
  const idle = group('tiers');
  await idle.fetch(0);
  t.equal(idle.maxWaitTime, IDLE_FETCH_WAIT_MS, 'nothing paused: a long poll');
  t.equal(idle.minBytes, wait.minBytes, 'its minimum bytes untouched');
  const waiting = group('tiers', [{ topic: 'retry.1s', partitions: [3] }]);
  await waiting.fetch(0);
  t.equal(waiting.maxWaitTime, 200, 'a paused partition: the short wait');
  stop();
});
