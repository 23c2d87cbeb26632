// A batch-wait consumer's fetch waits for a fuller batch only while records come; after an empty
// fetch it long-polls (shared/src/kafka/kafkajs-fetch-wait.ts).
import t from 'tap';
import {
  adaptFetchWait,
  ConsumerGroup,
  type ConsumerGroupInternals,
  IDLE_FETCH_WAIT_MS,
  nextFetchWait,
} from '../src/kafka/kafkajs-fetch-wait.ts';

const wait = { minBytes: 1_048_576, maxWaitMs: 3, idleWaitMs: IDLE_FETCH_WAIT_MS };

t.test('after records the batch wait, after none a long poll answered by the first byte', async (t) => {
  t.same(nextFetchWait(wait, true), { minBytes: 1_048_576, maxWaitTime: 3 });
  t.same(nextFetchWait(wait, false), { minBytes: 1, maxWaitTime: IDLE_FETCH_WAIT_MS });
});

/** A consumer group as kafkajs builds it, as far as fetch reads it: a fetch that fails comes back empty. */
const group = (groupId: string) =>
  Object.assign(Object.create(ConsumerGroup.prototype) as ConsumerGroupInternals, {
    groupId,
    minBytes: wait.minBytes,
    maxWaitTime: wait.maxWaitMs,
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
