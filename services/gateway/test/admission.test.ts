// The admission bound (PUBLISH_MAX_BACKLOG) on a real broker: with no router reading, every accepted
// event is backlog; once it is over the bound, publish and batch publish are answered 429
// RATE_LIMITED with Retry-After and nothing is written; once a consumer in the router's group
// commits past them, publishing is admitted again. The events topic holds exactly the accepted events.
// Only the deliveries of types a sender runs for count, on Kafka and on the embedded log.
import t, { type Test } from 'tap';
import type { Bus, InRecord } from '@switchyard/shared/bus/index.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import { SenderPresenceStore } from '@switchyard/shared/db/stores/sender-presence.ts';
import { metrics } from '@switchyard/shared/metrics.ts';
import type { EventRecord } from '@switchyard/shared/model/index.ts';
import { waitFor } from '@switchyard/shared/testing/index.ts';
import { buildEmbeddedTestApp, buildTestApp, type TestApp } from './helpers.ts';

const BOUND = 5;

t.test('publishing is refused with 429 while the delivery backlog is over PUBLISH_MAX_BACKLOG', async (t) => {
  const { app, config, call, bus: gatewayBus } = await buildTestApp(t, { PUBLISH_MAX_BACKLOG: String(BOUND) });
  t.equal((await call('PUT', '/api/v1/tenants/acme')).status, 201);
  const publish = async (id: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/publish',
      headers: { authorization: `Bearer ${config.API_KEY}` },
      payload: { id, tenant_id: 'acme', topic: 'order.paid', data: { id } },
    });
    return { status: res.statusCode, retryAfter: res.headers['retry-after'], body: res.json() };
  };

  const accepted = new Set<string>();
  const refused = new Set<string>();
  let n = 0;
  // Nothing reads the events topic yet, so each accepted event adds one record of backlog; the
  // bound is read once a second, so publishing goes on until the figure crosses it.
  let refusal: Awaited<ReturnType<typeof publish>> | undefined;
  await waitFor('a publish refused once the backlog is over the bound', async () => {
    const id = `e-${++n}`;
    const a = await publish(id);
    if (a.status === 202) accepted.add(id);
    else {
      refused.add(id);
      refusal = a;
    }
    return a.status === 429;
  });
  t.ok(accepted.size > BOUND, `${accepted.size} accepted before the first refusal`);
  t.equal(refusal?.body.code, 'RATE_LIMITED', 'the documented code');
  t.equal(refusal?.body.status, 429);
  t.equal(refusal?.retryAfter, '1', 'Retry-After: the backlog is read again within a second');
  t.match(refusal?.body.message, /PUBLISH_MAX_BACKLOG \(5\); nothing was published/);

  const batch = await app.inject({
    method: 'POST',
    url: '/api/v1/publish/batch',
    headers: { authorization: `Bearer ${config.API_KEY}` },
    payload: { events: [{ id: 'b-1', tenant_id: 'acme', topic: 'order.paid', data: {} }] },
  });
  t.equal(batch.statusCode, 429, 'a batch is refused whole');
  t.equal(batch.headers['retry-after'], '1');
  refused.add('b-1');
  const unauthenticated = await app.inject({ method: 'POST', url: '/api/v1/publish', payload: {} });
  t.equal(unauthenticated.statusCode, 401, 'a request without a credential learns nothing of the load');
  t.ok(
    (await metrics.eventsPublished.get()).values.some((v) => v.labels.outcome === 'refused' && v.value >= 2),
    'refusals counted in switchyard_events_published_total{outcome="refused"}',
  );

  // A consumer in the router's group reads and commits what is there: the backlog drains.
  const bus = gatewayBus as Bus;
  const written: string[] = [];
  const consumer = await bus.consume<EventRecord>({
    groupId: 'router',
    topics: [TOPIC.events],
    commitIntervalMs: 100,
    async handle(record: InRecord<EventRecord>) {
      written.push(record.value.id);
    },
  });
  t.teardown(() => consumer.close());
  await waitFor('publishing admitted once the backlog drained', async () => {
    const id = `e-${++n}`;
    const a = await publish(id);
    if (a.status === 202) accepted.add(id);
    else refused.add(id);
    return a.status === 202;
  });
  await waitFor('the consumer read every accepted event', async () => accepted.size === written.length);
  t.same(new Set(written), accepted, 'the events topic holds exactly the accepted events');
  t.notOk(
    written.some((id) => refused.has(id)),
    'no refused event was written',
  );
});

t.test('with the bound off (the default) nothing is refused', async (t) => {
  const { call } = await buildTestApp(t);
  t.equal((await call('PUT', '/api/v1/tenants/acme')).status, 201);
  for (let i = 0; i < 20; i++) {
    t.equal((await call('POST', '/api/v1/publish', { tenant_id: 'acme', topic: 'order.paid', data: { i } })).status, 202);
  }
});

/**
 * A type no sender runs (sender presence, as the NO_SENDER reason reads it) is left out of the
 * backlog: its group never committed, so its lag is every record its topic holds, and counting it
 * would refuse every tenant's publishes. Once a sender of the type marks itself present, it counts.
 */
const TYPES_BOUND = 10;

async function onlyRunningTypesCount(t: Test, { app, config, db, bus }: Pick<TestApp, 'app' | 'config' | 'db'> & { bus: Bus }) {
  metrics.publishBacklog.reset();
  const backlog = async () => (await metrics.publishBacklog.get()).values[0]?.value;
  const inject = (method: 'PUT' | 'POST', url: string, payload?: object) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${config.API_KEY}` }, ...(payload ? { payload } : {}) });
  const publish = async () => (await inject('POST', '/api/v1/publish', { tenant_id: 'acme', topic: 'order.paid', data: {} })).statusCode;
  t.equal((await inject('PUT', '/api/v1/tenants/acme')).statusCode, 201);
  const producer = await bus.producer();
  // Deliveries of sqs, a type no sender runs here: twice the bound.
  await producer.send(
    TOPIC.deliveries.sqs,
    Array.from({ length: 2 * TYPES_BOUND }, (_, i) => ({ key: 'd-sqs', value: { i } })),
  );
  // A webhook sender runs, and three of its deliveries wait. Written after the sqs ones, so a read
  // that sees them would see those too.
  const presence = new SenderPresenceStore(db);
  await presence.mark(['webhook']);
  await producer.send(
    TOPIC.deliveries.webhook,
    Array.from({ length: 3 }, (_, i) => ({ key: 'd-webhook', value: { i } })),
  );
  await waitFor('the backlog read: the webhook deliveries alone', async () => (await backlog()) === 3, 15_000);
  t.equal(await publish(), 202, 'admitted: the sqs deliveries wait for a sender of their type, not in the backlog');

  // An sqs sender starts: its type's deliveries count from then on (with the webhook ones and the
  // event published above), and publishing is refused.
  await presence.mark(['sqs']);
  await waitFor('the backlog read: the sqs deliveries too', async () => (await backlog()) === 2 * TYPES_BOUND + 3 + 1, 15_000);
  t.equal(await publish(), 429, 'refused: the sqs deliveries count once a sender of their type runs');
}

t.test('only the types a sender runs for count: Kafka', async (t) => {
  const built = await buildTestApp(t, { PUBLISH_MAX_BACKLOG: String(TYPES_BOUND) });
  await onlyRunningTypesCount(t, { ...built, bus: built.bus as Bus });
});

t.test('only the types a sender runs for count: embedded log and database', async (t) => {
  const built = await buildEmbeddedTestApp(t, { PUBLISH_MAX_BACKLOG: String(TYPES_BOUND) }, { log: true });
  await onlyRunningTypesCount(t, { ...built, bus: built.bus as Bus });
});
