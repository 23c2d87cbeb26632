// Publishing while the Kafka broker is down: every publish is answered within PUBLISH_TIMEOUT_MS, with
// 503 and Retry-After, never 202 for an event that was not written; and once the broker is back, what
// was refused is published (a caller-chosen id exactly once). A gateway (build + inject) on a broker
// of the test's own, stopped and started again with infra/kafka/kafka.sh.
import t from 'tap';
import { createKafkaBus } from '@switchyard/shared/kafka/index.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import { startOwnBroker, waitFor } from '@switchyard/shared/testing/index.ts';
import { buildTestApp } from '../../services/gateway/test/helpers.ts';

const TIMEOUT_MS = 3_000;
/**
 * Far above the limit, far below what publishes took before it (33-49 s): only the answer being
 * bounded by the setting passes, however loaded the machine. The limit itself is what the 503 names.
 */
const ANSWERED_WITHIN_MS = TIMEOUT_MS + 15_000;

t.test('publishing while the broker is down is answered 503 within PUBLISH_TIMEOUT_MS', async (t) => {
  const { brokers, kafka } = await startOwnBroker(t, 'kafka-publish-timeout');
  // No publish linger: the first write goes alone and the others queue behind it, whatever the timing.
  const { app, config, call } = await buildTestApp(t, {
    KAFKA_BROKERS: brokers,
    PUBLISH_TIMEOUT_MS: String(TIMEOUT_MS),
    PUBLISH_LINGER_MS: '0',
  });
  t.equal((await call('PUT', '/api/v1/tenants/acme')).status, 201);
  const publish = async (id?: string) => {
    const started = performance.now();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/publish',
      headers: { authorization: `Bearer ${config.API_KEY}` },
      payload: { tenant_id: 'acme', topic: 'order.paid', data: { n: 1 }, ...(id ? { id } : {}) },
    });
    return { status: res.statusCode, retryAfter: res.headers['retry-after'], body: res.json(), ms: performance.now() - started };
  };
  t.equal((await publish('before')).status, 202, 'the broker up: accepted');

  kafka('stop');
  // Several at once, with and without an id: one write in flight, the others queued behind it.
  const ids = ['down-1', 'down-2', 'down-3'];
  const answers = await Promise.all([...ids.map((id) => publish(id)), publish(), publish(), publish()]);
  for (const [i, a] of answers.entries()) {
    const what = i < ids.length ? `with id ${ids[i]}` : 'without an id';
    t.equal(a.status, 503, `${what}: 503`);
    t.ok(a.retryAfter, `${what}: with Retry-After`);
    t.equal(a.body.code, 'SERVICE_UNAVAILABLE');
    t.match(a.body.message, `within ${TIMEOUT_MS} ms`, `${what}: the time limit answered it`);
    t.ok(a.ms < ANSWERED_WITHIN_MS, `${what}: answered in ${Math.round(a.ms)} ms`);
  }
  t.comment(answers.map((a) => `${a.status} in ${Math.round(a.ms)} ms: ${a.body.message}`).join('\n'));
  t.ok(
    answers.some((a) => /nothing was published/.test(a.body.message)),
    'an event still queued at the limit is taken back: nothing published',
  );

  kafka('start');
  // Once the broker is back, each refused id is published, or answered as a duplicate if its
  // timed-out write landed after all; 409 while such a write is still settling.
  const final = new Map<string, { status: number; duplicate: boolean }>();
  for (const id of ids) {
    await waitFor(
      `${id} accepted once the broker is back`,
      async () => {
        const a = await publish(id);
        if (a.status === 202) final.set(id, { status: a.status, duplicate: a.body.duplicate });
        return a.status === 202;
      },
      120_000,
    );
  }
  t.same([...final.keys()], ids, 'every refused id accepted after');

  // What the events topic holds: every accepted id, a caller-chosen one exactly once.
  const bus = createKafkaBus({
    brokers: [brokers],
    clientId: 'publish-timeout-test',
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    partitions: 1,
    replicationFactor: 1,
    log: createLogger('test', 'silent'),
  });
  t.teardown(() => bus.close());
  const seen: string[] = [];
  await bus.consume<{ id: string }>({
    groupId: 'publish-timeout-reader',
    topics: [TOPIC.events],
    handle: async (r) => void seen.push(r.value.id),
  });
  await waitFor('every accepted id read back', () => ['before', ...ids].every((id) => seen.includes(id)), 60_000);
  for (const id of ['before', ...ids]) t.equal(seen.filter((x) => x === id).length, 1, `${id} written once`);
});
