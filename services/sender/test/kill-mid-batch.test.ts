// The sender killed (SIGKILL) while sqs batches are in flight, in stack mode (every service its own
// process on the real broker and Postgres, ElasticMQ behind the AWS gate): every accepted event still
// reaches a final attempt and the queue (nothing lost), repeats stay within the in-flight window
// (at-least-once: the killed sender had not committed what it had in flight), and the deliveries
// went out in batches (far fewer requests than messages).
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startAwsGate } from '@switchyard/shared/testing/peers/aws-gate.ts';
import { startElasticMq } from '@switchyard/shared/testing/peers/elasticmq.ts';
import { freePort, publishAll, startFaultStack, startService, unfinished, waitFor } from '@switchyard/shared/testing/index.ts';
import t from 'tap';

const ADMIN = { accessKeyId: 'AKIDADMIN', secretAccessKey: 'admin-secret' };
const KEY = { key: 'AKIDKILL', secret: 'kill-secret-0123' };

t.test('SIGKILL of the sender while sqs batches are in flight', async (t) => {
  const emqPort = await freePort();
  const gate = await startAwsGate(t, {
    upstream: { host: '127.0.0.1', port: emqPort },
    protocol: 'json',
    throttleCode: 'RequestThrottled',
  });
  await startElasticMq(t, { port: emqPort, publicPort: gate.port });
  gate.keys.set(ADMIN.accessKeyId, ADMIN.secretAccessKey);
  gate.keys.set(KEY.key, KEY.secret);
  const admin = new SQSClient({ endpoint: gate.url, region: 'elasticmq', credentials: ADMIN });
  t.teardown(() => admin.destroy());
  const queueUrl = String((await admin.send(new CreateQueueCommand({ QueueName: `kill-${Date.now().toString(36)}` }))).QueueUrl);

  const { env, db, procs, api, kill } = await startFaultStack(t);
  await api('PUT', '/api/v1/tenants/kill');
  const created = await api('POST', '/api/v1/tenants/kill/destinations', {
    type: 'sqs',
    topics: '*',
    config: { queue_url: queueUrl, endpoint: gate.url, region: 'elasticmq' },
    credentials: KEY,
  });
  t.equal(created.status, 201, 'the sqs destination is created');

  const requests = () => gate.seenBy.get(KEY.key) ?? 0;
  const count = 1500;
  const killAt = 300 + Math.floor(Math.random() * 600);
  let restart: Promise<void> | null = null;
  let requestsAtKill = 0;
  const { accepted } = await publishAll(api, 'kill', 'b', count, 8, async (n) => {
    if (n !== killAt) return;
    // Killed only once deliveries flow, so batches are in flight.
    await waitFor('sqs requests under way', () => requests() > 5, 60_000);
    requestsAtKill = requests();
    restart = (async () => {
      await kill(procs.sender);
      procs.sender = await startService(t, 'sender', env);
    })();
  });
  await restart;
  const missing = await unfinished(db, 'kill', accepted, 120_000);
  t.same(missing, [], 'every accepted event reached a final attempt');

  const ids: string[] = [];
  for (;;) {
    const r = await admin.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], VisibilityTimeout: 600 }),
    );
    if (!r.Messages?.length) break;
    for (const m of r.Messages) {
      ids.push((JSON.parse(m.MessageAttributes?.metadata?.StringValue ?? '{}') as Record<string, string>)['event-id'] ?? '');
    }
  }
  const unique = new Set(ids);
  const lost = [...accepted].filter((id) => !unique.has(id));
  const duplicates = ids.length - unique.size;
  t.comment(
    `sender killed after ${requestsAtKill} sqs requests (publish ${killAt}); ${ids.length} messages, ${unique.size} events, ` +
      `${duplicates} repeats; ${requests()} SendMessageBatch requests in all`,
  );
  t.same(lost, [], 'every accepted event is in the queue');
  t.equal(unique.size, count);
  // What the killed sender had in flight (at most SENDER_CONCURRENCY a partition) is delivered again.
  t.ok(duplicates <= count * 0.25, `repeats (${duplicates}) within the in-flight window`);
  t.ok(requests() < ids.length, `batched: ${requests()} requests for ${ids.length} messages`);
});
