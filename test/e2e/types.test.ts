// Delivery to every type beyond webhook, end to end, each against a real peer on loopback (ElasticMQ,
// kinesalite, the S3 peer behind the AWS gate, a private RabbitMQ node, a local event gateway): published events arrive with
// the contract's body and metadata and their attempts list as success; a wrong credential is a failed
// attempt with a clear reason, not a pending delivery; and deliveries that waited in their topic while
// no sender of their type ran are delivered once one starts. Every service its own process; with
// SWITCHYARD_E2E_MODE=embedded (test/embedded/e2e-types.test.ts), one embedded process instead.
import { createHmac } from 'node:crypto';
import { GetRecordsCommand, GetShardIteratorCommand, KinesisClient, CreateStreamCommand, ListShardsCommand } from '@aws-sdk/client-kinesis';
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import amqp from 'amqplib';
import t from 'tap';
import { startReceiver, startService, startStack, waitFor } from '@switchyard/shared/testing/index.ts';
import { startElasticMq } from '@switchyard/shared/testing/peers/elasticmq.ts';
import { startKinesalite } from '@switchyard/shared/testing/peers/kinesalite.ts';
import { startRabbitMq } from '@switchyard/shared/testing/peers/rabbitmq.ts';
import { startAwsGate } from '@switchyard/shared/testing/peers/aws-gate.ts';
import { startS3Peer } from '@switchyard/shared/testing/peers/s3.ts';

interface Attempt {
  event_id: string;
  destination_id: string;
  status: string;
  code: string;
  response_data: Record<string, unknown> | null;
}

t.test('sqs, rabbitmq, kinesis, s3 and gateway destinations, each against a real peer', async (t) => {
  const [emq, kin, s3peer, rabbit, gw] = await Promise.all([
    startElasticMq(t),
    startKinesalite(t),
    startS3Peer(t),
    startRabbitMq(t, [{ name: 'switchyard', password: 'rabbit-pass-1' }]),
    startReceiver(t),
  ]);
  const signingKey = 'gateway-signing-key';
  gw.respond((r) => {
    const expected = `v0=${createHmac('sha256', signingKey).update(r.body).digest('base64')}`;
    return r.headers['x-hookdeck-signature'] === expected ? { status: 200, body: '{"ok":true}' } : { status: 401 };
  });
  // The S3 peer checks no signature: destinations reach it through the gate, which knows one key.
  const s3 = await startAwsGate(t, {
    upstream: { host: '127.0.0.1', port: s3peer.port },
    protocol: 's3',
    throttleCode: 'SlowDown',
    throttleStatus: 503,
  });
  s3.keys.set('AKIDE2E', 'e2e-secret');
  const aws = { region: 'us-east-1', requestHandler: new NodeHttpHandler() };
  const sqs = new SQSClient({ ...aws, endpoint: emq.url, region: 'elasticmq', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const kinesis = new KinesisClient({ ...aws, endpoint: kin.url, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const s3c = new S3Client({
    ...aws,
    endpoint: s3peer.url,
    forcePathStyle: true,
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  t.teardown(() => {
    for (const c of [sqs, kinesis, s3c]) c.destroy();
  });
  const mq = await amqp.connect({ hostname: rabbit.host, port: rabbit.port, username: rabbit.admin.name, password: rabbit.admin.password });
  t.teardown(() => mq.close().catch(() => {}));
  const ch = await mq.createChannel();

  // The peers' side: a queue, a stream, a bucket, an exchange with a bound queue.
  const queueUrl = String((await sqs.send(new CreateQueueCommand({ QueueName: 'events' }))).QueueUrl);
  await kinesis.send(new CreateStreamCommand({ StreamName: 'events', ShardCount: 1 }));
  await s3c.send(new CreateBucketCommand({ Bucket: 'events-bucket' }));
  await ch.assertExchange('events', 'topic', { durable: true });
  const bound = (await ch.assertQueue('', { exclusive: true })).queue;
  await ch.bindQueue(bound, 'events', 'user.*');

  // First no sender of these types runs: their deliveries wait in their topics.
  const {
    env: webhookOnly,
    api,
    sender,
  } = await startStack(t, {
    TOPICS: 'user.created,user.deleted',
    KAFKA_PARTITIONS: '1',
    RETRY_SCHEDULE: '600',
    EVENT_GATEWAY_BASE_URL: gw.url,
    SENDER_TYPES: 'webhook',
  });
  await api('PUT', '/api/v1/tenants/acme');
  const create = async (type: string, config: Record<string, unknown>, credentials: Record<string, unknown>) => {
    const r = await api<{ id: string }>('POST', '/api/v1/tenants/acme/destinations', {
      type,
      topics: '*',
      config,
      credentials,
      delivery_metadata: { env: 'e2e' },
    });
    if (r.status !== 201) throw new Error(`create ${type} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body.id;
  };
  const d = {
    sqs: await create('sqs', { queue_url: queueUrl, endpoint: emq.url, region: 'elasticmq' }, { key: 'AKIDE2E', secret: 'e2e-secret' }),
    kinesis: await create(
      'kinesis',
      { stream_name: 'events', region: 'us-east-1', endpoint: kin.url },
      { key: 'AKIDE2E', secret: 'e2e-secret' },
    ),
    s3: await create(
      's3',
      {
        bucket: 'events-bucket',
        region: 'us-east-1',
        endpoint: s3.url,
        key_template: 'join(\'/\', [metadata.topic, metadata."event-id"])',
      },
      { key: 'AKIDE2E', secret: 'e2e-secret' },
    ),
    rabbitmq: await create(
      'rabbitmq',
      { server_url: rabbit.serverUrl, exchange: 'events' },
      { username: 'switchyard', password: 'rabbit-pass-1' },
    ),
    gateway: await create('gateway', {}, { token: Buffer.from(`src_e2e:${signingKey}`).toString('base64') }),
  };
  const wrong = {
    s3: await create('s3', { bucket: 'events-bucket', region: 'us-east-1', endpoint: s3.url }, { key: 'AKIDUNKNOWN', secret: 'nope' }),
    rabbitmq: await create(
      'rabbitmq',
      { server_url: rabbit.serverUrl, exchange: 'events' },
      { username: 'switchyard', password: 'wrong-password' },
    ),
    gateway: await create('gateway', {}, { token: Buffer.from('src_e2e:not-the-key').toString('base64') }),
  };

  const attempts = async (destination: string): Promise<Attempt[]> =>
    (
      await api<{ models: Attempt[] }>(
        'GET',
        `/api/v1/attempts?${new URLSearchParams({ destination_id: destination, include: 'response_data', limit: '100' })}`,
      )
    ).body.models;
  const publish = async (data: Record<string, unknown>) => {
    const r = await api<{ id: string; destination_ids: string[] }>('POST', '/api/v1/publish', {
      tenant_id: 'acme',
      topic: 'user.created',
      data,
      metadata: { source: 'e2e' },
    });
    if (r.status !== 202) throw new Error(`publish answered ${r.status}`);
    return r.body;
  };

  const first = await publish({ n: 1, name: 'Zoë' });
  t.equal(first.destination_ids.length, 8, 'routed to every destination');
  await waitFor(
    'the event to be routed and stored',
    async () => (await api('GET', `/api/v1/tenants/acme/events/${first.id}`)).status === 200,
  );
  await new Promise((r) => setTimeout(r, 1000));
  t.same(await attempts(d.sqs), [], 'no sqs sender runs: the delivery waits in deliveries.sqs');

  // A sender with the default SENDER_TYPES (in embedded mode: the process again, with it).
  await sender.stop();
  const { SENDER_TYPES: _webhookOnly, ...defaults } = webhookOnly;
  await startService(t, 'sender', defaults);
  await waitFor('the API back', async () => (await api('GET', '/healthz')).status === 200, 60_000);
  const second = await publish({ n: 2 });

  for (const [type, id] of Object.entries(d)) {
    const done = await waitFor(`${type}: two successful attempts`, async () => {
      const list = await attempts(id);
      return list.filter((a) => a.status === 'success').length === 2 ? list : undefined;
    });
    t.same(done.map((a) => a.event_id).sort(), [first.id, second.id].sort(), `${type}: the waiting delivery and the new one`);
    t.ok(
      done.every((a) => a.code === (type === 'gateway' ? '200' : 'OK')),
      `${type}: code ${done.map((a) => a.code).join(',')}`,
    );
  }
  for (const [type, id] of Object.entries(wrong)) {
    const [a] = await waitFor(`${type} (wrong credentials): a failed attempt`, async () => {
      const list = await attempts(id);
      return list.length >= 2 ? list : undefined;
    });
    t.match(a, { status: 'failed', response_data: { reason: 'unauthorized' } }, `${type}: ${JSON.stringify(a?.response_data)}`);
  }

  // What each peer holds: the event data as published, the metadata where the medium keeps it.
  const meta = (m: Record<string, unknown>, id: string) => {
    t.match(m, { 'event-id': id, topic: 'user.created', env: 'e2e', source: 'e2e' });
    t.match(m.timestamp, /^\d+$/);
  };
  const msgs = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'] }));
  const firstMsg = msgs.Messages?.find((m) => m.Body === JSON.stringify({ n: 1, name: 'Zoë' }));
  t.ok(firstMsg, 'sqs: the body is the data');
  meta(JSON.parse(firstMsg?.MessageAttributes?.metadata?.StringValue ?? '{}'), first.id);

  const shard = (await kinesis.send(new ListShardsCommand({ StreamName: 'events' }))).Shards?.[0]?.ShardId;
  const it = await kinesis.send(new GetShardIteratorCommand({ StreamName: 'events', ShardId: shard, ShardIteratorType: 'TRIM_HORIZON' }));
  const recs = (await kinesis.send(new GetRecordsCommand({ ShardIterator: it.ShardIterator }))).Records ?? [];
  const rec = JSON.parse(Buffer.from(recs[0]?.Data ?? new Uint8Array()).toString()) as { metadata: Record<string, string>; data: unknown };
  t.same(rec.data, { n: 1, name: 'Zoë' }, 'kinesis: {metadata, data}');
  meta(rec.metadata, first.id);
  t.equal(recs[0]?.PartitionKey, first.id, 'kinesis: partitioned by event id');

  const key = `user.created/${first.id}`;
  const obj = await s3c.send(new GetObjectCommand({ Bucket: 'events-bucket', Key: key }));
  t.equal(await obj.Body?.transformToString(), JSON.stringify({ n: 1, name: 'Zoë' }), 's3: the object is the data, at the templated key');
  meta((await s3c.send(new HeadObjectCommand({ Bucket: 'events-bucket', Key: key }))).Metadata ?? {}, first.id);
  t.equal(
    (await s3c.send(new ListObjectsV2Command({ Bucket: 'events-bucket' }))).KeyCount,
    2,
    's3: one object per event (the wrong key wrote none)',
  );

  const m1 = await ch.get(bound, { noAck: true });
  t.ok(m1, 'rabbitmq: routed by topic to the bound queue');
  if (m1) {
    t.equal(m1.content.toString(), JSON.stringify({ n: 1, name: 'Zoë' }));
    t.equal(m1.fields.routingKey, 'user.created');
    meta(Object.fromEntries(Object.entries(m1.properties.headers ?? {}).map(([k, v]) => [k, String(v)])), first.id);
  }

  const posted = gw.requests.find((r) => r.url === '/src_e2e' && r.headers['x-outpost-event-id'] === first.id && r.body.includes('Zoë'));
  t.ok(posted, 'gateway: POSTed to <base>/<source id>');
  t.equal(posted?.headers['x-outpost-env'], 'e2e', 'gateway: metadata as prefixed headers');
});
