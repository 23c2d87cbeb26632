// Delivery to pubsub, servicebus and kafka destinations end to end: each receives the published
// events, read back from its peer (the Pub/Sub peer with the official subscriber client, the test
// broker with kafkajs, the Service Bus peer's record of what @azure/service-bus sent), and a
// destination that cannot work gets failed attempts with the reason. Every service its own process;
// with SWITCHYARD_E2E_MODE=embedded (test/embedded/e2e-pubsub-servicebus-kafka.test.ts), one
// embedded process. The peers: shared/src/testing/peers/ and the broker's SASL listener
// (infra/test.sh), so run it with `npm test -- <this file>`.

import { generateKeyPairSync } from 'node:crypto';
import { PubSub, v1 } from '@google-cloud/pubsub';
import { credentials } from '@grpc/grpc-js';
import { Kafka, logLevel } from 'kafkajs';
// The test's own kafkajs consumer, with the fix the services apply (no millisecond polling).
import '@switchyard/shared/kafka/kafkajs/idle-poll.ts';
import t from 'tap';
import { createTopicReady, startStack, waitFor } from '@switchyard/shared/testing/index.ts';
import { startPubSubPeer } from '@switchyard/shared/testing/peers/pubsub.ts';
import { startServiceBusPeer } from '@switchyard/shared/testing/peers/servicebus.ts';

interface Attempt {
  destination_id: string;
  event_id: string;
  status: string;
  code: string;
  response_data: { reason?: string; message?: string } | null;
}

t.test('pubsub, servicebus and kafka destinations, each against its peer', async (t) => {
  const plain = process.env.KAFKA_BROKERS;
  const saslPort = process.env.KAFKA_SASL_PORT;
  if (!plain || !saslPort) throw new Error('KAFKA_BROKERS and KAFKA_SASL_PORT are not set: run this through npm test (infra/test.sh)');

  // The peers.
  const pubsubPeer = await startPubSubPeer();
  t.teardown(() => pubsubPeer.close());
  const [psHost, psPort] = pubsubPeer.host.split(':');
  const psAdmin = new PubSub({ projectId: 'switchyard-e2e', apiEndpoint: pubsubPeer.host, emulatorMode: true });
  const [psTopic] = await psAdmin.createTopic('orders');
  await psTopic.createSubscription('orders-sub');
  const subscriber = new v1.SubscriberClient({ servicePath: psHost, port: Number(psPort), sslCreds: credentials.createInsecure() });
  t.teardown(async () => {
    await subscriber.close();
    await psAdmin.close();
  });
  const sbPeer = await startServiceBusPeer({ entities: ['orders'], keys: { Send: 'c2VuZC1rZXk=' } });
  t.teardown(() => sbPeer.close());
  const kafka = new Kafka({ clientId: 'e2e-dest', brokers: plain.split(','), logLevel: logLevel.NOTHING });
  const kAdmin = kafka.admin();
  await kAdmin.connect();
  t.teardown(() => kAdmin.disconnect());
  const kTopic = `dest-orders-${Date.now().toString(36)}`;
  await createTopicReady(kAdmin, kTopic, 1);

  // Every type's sender running (the default SENDER_TYPES); in embedded mode, one process.
  const { api } = await startStack(t, {
    TOPICS: 'order.paid',
    RETRY_SCHEDULE: '60',
    // Each type's first delivery loads its SDK and opens its connection: seconds on a loaded host,
    // and a timeout here would wait out the 60 s retry.
    DELIVERY_TIMEOUT_SECONDS: '20',
  });
  t.equal((await api('PUT', '/api/v1/tenants/shop')).status, 201);
  const create = async (body: Record<string, unknown>) => {
    const r = await api<{ id: string }>('POST', '/api/v1/tenants/shop/destinations', { topics: ['order.paid'], ...body });
    t.equal(r.status, 201, `${String(body.type)} destination created: ${JSON.stringify(r.body)}`);
    return r.body.id;
  };
  const serviceAccount = JSON.stringify({
    type: 'service_account',
    project_id: 'switchyard-e2e',
    private_key: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
    client_email: 'publisher@switchyard-e2e.iam.gserviceaccount.com',
  });
  const pubsub = await create({
    type: 'pubsub',
    config: { project_id: 'switchyard-e2e', topic: 'orders', endpoint: pubsubPeer.host },
    credentials: { service_account_json: serviceAccount },
  });
  const servicebus = await create({
    type: 'servicebus',
    config: { name: 'orders' },
    credentials: { connection_string: sbPeer.connectionString() },
  });
  const kafkaDest = await create({
    type: 'kafka',
    config: {
      brokers: `127.0.0.1:${saslPort}`,
      topic: kTopic,
      sasl_mechanism: 'scram-sha-256',
      tls: 'false',
      partition_key_template: 'data.customer',
    },
    credentials: { username: 'switchyard', password: 'switchyard-secret' },
  });
  // One of each that cannot work.
  const badPubsub = await create({
    type: 'pubsub',
    config: { project_id: 'switchyard-e2e', topic: 'no-such-topic', endpoint: `http://${pubsubPeer.host}` },
    credentials: { service_account_json: serviceAccount },
  });
  const badServicebus = await create({
    type: 'servicebus',
    config: { name: 'no-such-queue' },
    credentials: { connection_string: sbPeer.connectionString() },
  });
  const badKafka = await create({
    type: 'kafka',
    config: { brokers: `127.0.0.1:${saslPort}`, topic: kTopic, sasl_mechanism: 'plain', tls: false },
    credentials: { username: 'switchyard', password: 'not-the-password' },
  });

  const events = [1, 2, 3].map((n) => ({ data: { order: n, customer: `c${n % 2}` }, metadata: { region: 'eu' } }));
  const ids: string[] = [];
  for (const e of events) {
    const r = await api<{ id: string; destination_ids: string[] }>('POST', '/api/v1/publish', {
      tenant_id: 'shop',
      topic: 'order.paid',
      eligible_for_retry: true,
      ...e,
    });
    t.equal(r.status, 202);
    t.equal(r.body.destination_ids.length, 6, 'routed to all six destinations');
    ids.push(r.body.id);
  }

  t.test('pubsub: the subscription receives every event with its attributes', async (t) => {
    const got: Array<{ data: string; attributes: Record<string, string> }> = [];
    const subscription = 'projects/switchyard-e2e/subscriptions/orders-sub';
    await waitFor(
      'pubsub messages',
      async () => {
        const [res] = await subscriber.pull({ subscription, maxMessages: 10 });
        for (const m of res.receivedMessages ?? [])
          got.push({ data: Buffer.from(m.message?.data ?? '').toString(), attributes: { ...m.message?.attributes } });
        const ackIds = (res.receivedMessages ?? []).map((m) => m.ackId as string);
        if (ackIds.length) await subscriber.acknowledge({ subscription, ackIds });
        return got.length >= 3;
      },
      60_000,
    );
    t.same(
      got.map((m) => JSON.parse(m.data)).sort((a, b) => a.order - b.order),
      events.map((e) => e.data),
    );
    t.same(got.map((m) => m.attributes['event-id']).sort(), [...ids].sort(), 'event-id attribute');
    t.ok(
      got.every((m) => m.attributes.topic === 'order.paid' && m.attributes.region === 'eu'),
      'topic and event metadata',
    );
  });

  t.test('servicebus: the queue receives every event as JSON with application properties', async (t) => {
    const got = await sbPeer.waitFor('orders', 3, 60_000);
    t.same(
      got.map((m) => JSON.parse(String(m.body))).sort((a, b) => a.order - b.order),
      events.map((e) => e.data),
    );
    t.ok(
      got.every((m) => m.content_type === 'application/json'),
      'content type',
    );
    t.same(got.map((m) => m.message_id).sort(), [...ids].sort(), 'message id = event id');
    t.ok(
      got.every((m) => m.application_properties.region === 'eu' && m.application_properties.topic === 'order.paid'),
      'properties',
    );
  });

  t.test('kafka: the topic receives every event, keyed by the template, with headers', async (t) => {
    const got: Array<{ key: string; value: string; headers: Record<string, string> }> = [];
    const consumer = kafka.consumer({ groupId: `e2e-dest-${Date.now().toString(36)}`, maxWaitTimeInMs: 100 });
    await consumer.connect();
    t.teardown(() => consumer.disconnect());
    await consumer.subscribe({ topic: kTopic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        got.push({
          key: message.key?.toString() ?? '',
          value: message.value?.toString() ?? '',
          headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])),
        });
      },
    });
    await waitFor('kafka records', () => got.length >= 3, 60_000);
    t.same(
      got.map((m) => JSON.parse(m.value)).sort((a, b) => a.order - b.order),
      events.map((e) => e.data),
    );
    t.same(got.map((m) => m.key).sort(), ['c0', 'c1', 'c1'], 'key from partition_key_template');
    t.ok(
      got.every((m) => m.headers['content-type'] === 'application/json' && m.headers.region === 'eu'),
      'headers',
    );
  });

  t.test('every delivery is an attempt; the ones that cannot work fail with their reason', async (t) => {
    const attempts = await waitFor(
      'eighteen attempts',
      async () => {
        const r = await api<{ models: Attempt[] }>('GET', '/api/v1/tenants/shop/attempts?limit=100');
        return r.body.models.length >= 18 ? r.body.models : null;
      },
      60_000,
    );
    const of = (d: string) => attempts.filter((a) => a.destination_id === d);
    for (const d of [pubsub, servicebus, kafkaDest])
      t.ok(of(d).length === 3 && of(d).every((a) => a.status === 'success' && a.code === 'OK'), `${d}: 3 successes`);
    const reasons = (d: string) => [...new Set(of(d).map((a) => `${a.status}/${a.code}/${a.response_data?.reason}`))];
    t.same(reasons(badPubsub), ['failed/ERR/not_found'], 'pubsub: missing topic');
    t.same(reasons(badServicebus), ['failed/ERR/not_found'], 'servicebus: missing queue');
    t.same(reasons(badKafka), ['failed/ERR/unauthorized'], 'kafka: wrong password');
  });
});
