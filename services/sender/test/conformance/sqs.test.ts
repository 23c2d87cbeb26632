// Conformance fixture: sqs, run twice: against ElasticMQ (the SQS protocol, from Maven Central) and
// against moto (PyPI), each behind the AWS gate, which checks each request's signature against its
// key table (neither peer checks one), throttles and fails batch entries on request.
import { createHash } from 'node:crypto';
import type { Test } from 'tap';
import type { EventRecord } from '@switchyard/shared/model/index.ts';
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startAwsGate } from '@switchyard/shared/testing/peers/aws-gate.ts';
import { startElasticMq } from '@switchyard/shared/testing/peers/elasticmq.ts';
import { startMoto } from '@switchyard/shared/testing/peers/moto.ts';
import { freePort, type Teardown } from '@switchyard/shared/testing/index.ts';
import { parseAllowList } from '../../src/egress.ts';
import type { Outcome, Target } from '../../src/sender.ts';
import { createSqsSender } from '../../src/sqs/sender.ts';
import { conformance, type Peer, type Received, sampleEvent } from './suite.ts';

const allow = parseAllowList(['127.0.0.0/8']);

const ADMIN = { accessKeyId: 'AKIDADMIN', secretAccessKey: 'admin-secret' };

interface SqsPeer {
  name: string;
  /** The region queues are made in and signed for. */
  region: string;
  /** Whether it refuses a message over a queue's MaximumMessageSize (ElasticMQ takes any size). */
  enforcesMaxMessageSize: boolean;
  /** Starts the peer on `port`; its queue URLs must name `publicPort` (the gate in front). */
  start(t: Teardown, port: number, publicPort: number): Promise<unknown>;
}

const PEERS: SqsPeer[] = [
  {
    name: 'ElasticMQ',
    region: 'elasticmq',
    enforcesMaxMessageSize: false,
    start: (t, port, publicPort) => startElasticMq(t, { port, publicPort }),
  },
  // moto names its queue URLs after the request's Host, the gate's.
  { name: 'moto', region: 'us-east-1', enforcesMaxMessageSize: true, start: (t, port) => startMoto(t, { port }) },
];

for (const upstream of PEERS) sqsConformance(upstream);

function sqsConformance(upstream: SqsPeer): void {
  let gate: Awaited<ReturnType<typeof startAwsGate>>;
  let admin: SQSClient;
  const region = upstream.region;
  // Where the peer enforces MaximumMessageSize (moto; ElasticMQ takes a message of any size).
  const oversizeAlone = async (t: Test, peer: Peer, deliver: (target: Target, event: EventRecord) => Promise<Outcome>) => {
    const base = await peer.destination();
    const q = await admin.send(
      new CreateQueueCommand({ QueueName: `conf-small-${Date.now().toString(36)}`, Attributes: { MaximumMessageSize: '1024' } }),
    );
    const target = { ...base, id: `${base.id}_small`, config: { ...base.config, queue_url: String(q.QueueUrl) } };
    const out = await deliver(target, sampleEvent({ data: { blob: 'x'.repeat(2048) } }));
    t.match(out, { status: 'failed', retryable: true, response_data: { reason: 'rejected' } }, JSON.stringify(out.response_data));
    t.match(await deliver(target, sampleEvent()), { status: 'success' }, 'a small one goes through');
  };
  conformance({
    type: 'sqs',
    peer: upstream.name,
    async start(t) {
      const upstreamPort = await freePort();
      gate = await startAwsGate(t, {
        upstream: { host: '127.0.0.1', port: upstreamPort },
        protocol: 'json',
        throttleCode: 'RequestThrottled',
      });
      await upstream.start(t, upstreamPort, gate.port);
      gate.keys.set(ADMIN.accessKeyId, ADMIN.secretAccessKey);
      admin = new SQSClient({ endpoint: gate.url, region, credentials: ADMIN });
      t.teardown(() => admin.destroy());
      const got = new Map<string, Received[]>();
      let n = 0;
      const newKey = () => {
        const key = `AKIDSQS${++n}`;
        const secret = `sqs-secret-${n}-${Date.now()}`;
        gate.keys.set(key, secret);
        return { key, secret };
      };
      const destination = async (): Promise<Target> => {
        const name = `conf-${Date.now().toString(36)}-${++n}`;
        const q = await admin.send(new CreateQueueCommand({ QueueName: name }));
        return {
          id: `des_sqs_${n}`,
          tenant_id: 'acme',
          type: 'sqs',
          config: { queue_url: String(q.QueueUrl), endpoint: gate.url, region },
          credentials: newKey(),
        };
      };
      return {
        sender: createSqsSender({ allow }),
        destination,
        async received(target) {
          const url = String(target.config.queue_url);
          const list = got.get(url) ?? [];
          got.set(url, list);
          for (;;) {
            const r = await admin.send(
              new ReceiveMessageCommand({
                QueueUrl: url,
                MaxNumberOfMessages: 10,
                MessageAttributeNames: ['All'],
                WaitTimeSeconds: 0,
                VisibilityTimeout: 300,
              }),
            );
            if (!r.Messages?.length) break;
            for (const m of r.Messages) {
              const attr = m.MessageAttributes?.metadata;
              list.push({
                body: m.Body ?? '',
                metadata: JSON.parse(attr?.StringValue ?? '{}') as Record<string, string>,
                extra: { attributes: Object.keys(m.MessageAttributes ?? {}), dataType: attr?.DataType },
              });
            }
          }
          return list;
        },
        connections: () => gate.connections,
        pointAt(target, host, port) {
          const q = new URL(String(target.config.queue_url));
          q.host = `${host}:${port}`;
          return { ...target, config: { ...target.config, queue_url: q.toString(), endpoint: `http://${host}:${port}` } };
        },
        async rotate(target) {
          gate.keys.delete(String(target.credentials.key));
          return { ...target, credentials: newKey() };
        },
        failures: {
          unauthorized: async (good) => ({ target: { ...good, credentials: { ...good.credentials, secret: 'not-the-secret' } } }),
          not_found: async (good) => ({
            target: { ...good, config: { ...good.config, queue_url: String(good.config.queue_url).replace(/[^/]+$/, 'no-such-queue') } },
          }),
          throttled: async (good) => {
            gate.throttle(String(good.credentials.key), 1, 7);
            return { target: good, expect: { minRetryAfterMs: 7000 } };
          },
          // Passes the field's pattern on create, and can never be sent to.
          invalid_config: async (good) => ({
            target: { ...good, config: { ...good.config, queue_url: 'http://[not-a-host/000000000000/q' } },
          }),
        },
        checkReceived(t, r) {
          t.same(r.extra?.attributes, ['metadata'], 'one message attribute, metadata');
          t.equal(r.extra?.dataType, 'String');
        },
      };
    },
    batch: () => ({
      maxEntries: 10,
      requests: (target) => gate.seenBy.get(String(target.credentials.key)) ?? 0,
      failEntries(marker) {
        gate.failEntries(marker, { code: 'InternalError', message: 'We encountered an internal error.', senderFault: false });
        return 'peer_error';
      },
      refuseRequests: (marker, times) =>
        gate.refuseRequests(marker, { code: 'InvalidParameterValue', message: 'One or more parameters are invalid.', times }),
      hangUp: (target) => gate.hangUp(String(target.credentials.key)),
      throttle: (target) => gate.throttle(String(target.credentials.key), 1, 2),
      // Past a message's 1 MiB (256 KiB until 2025): more than one request takes, so it goes alone.
      oversize: () => 'x'.repeat(1100 * 1024),
      senderWithWait: (waitMs) => createSqsSender({ allow, batchWaitMs: waitMs }),
    }),
    cases: {
      ...(upstream.enforcesMaxMessageSize
        ? { 'a message over the queue’s MaximumMessageSize, sent alone, is rejected and retried': oversizeAlone }
        : {}),
      'a queue URL other than the endpoint writes nothing to the console': async (t, peer, deliver) => {
        const good = await peer.destination();
        // No endpoint: the SDK resolves AWS's for the region and sends to the queue URL's host instead.
        const { endpoint: _, ...config } = good.config;
        const target = { ...good, id: `${good.id}_noendpoint`, config };
        const warned: unknown[] = [];
        const warn = console.warn;
        console.warn = (...args: unknown[]) => warned.push(args);
        t.teardown(() => {
          console.warn = warn;
        });
        t.match(await deliver(target, sampleEvent()), { status: 'success' });
        console.warn = warn;
        t.same(warned, [], 'no console.warn');
      },
      'a FIFO queue: ids over 128 characters are sent as their SHA-256': async (t, peer, deliver) => {
        const base = await peer.destination();
        const q = await admin.send(
          new CreateQueueCommand({ QueueName: `conf-fifo-long-${Date.now().toString(36)}.fifo`, Attributes: { FifoQueue: 'true' } }),
        );
        const target = { ...base, id: `des_${'d'.repeat(196)}`, config: { ...base.config, queue_url: String(q.QueueUrl) } };
        const event = sampleEvent();
        event.id = `${event.id}_${'e'.repeat(250 - event.id.length)}`;
        t.match(await deliver(target, event), { status: 'success' });
        const r = await admin.send(
          new ReceiveMessageCommand({
            QueueUrl: String(q.QueueUrl),
            MessageSystemAttributeNames: ['MessageGroupId', 'MessageDeduplicationId'],
            WaitTimeSeconds: 0,
          }),
        );
        const sha = (s: string) => createHash('sha256').update(s).digest('hex');
        t.equal(r.Messages?.[0]?.Attributes?.MessageGroupId, sha(target.id), 'message group = the SHA-256 of the destination id');
        t.equal(r.Messages?.[0]?.Attributes?.MessageDeduplicationId, sha(event.id), 'deduplication id = the SHA-256 of the event id');
      },
      'a FIFO queue: group and deduplication id per message of a batch, in its order': async (t, peer, deliver) => {
        const base = await peer.destination();
        const name = `conf-fifo-${Date.now().toString(36)}.fifo`;
        const q = await admin.send(new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true' } }));
        const target = { ...base, id: `${base.id}_fifo`, config: { ...base.config, queue_url: String(q.QueueUrl) } };
        // One batch: SQS keeps the order of a request's entries (requests in flight together are not ordered).
        const events = Array.from({ length: 10 }, () => sampleEvent());
        const outs = await Promise.all(events.map((e) => deliver(target, e)));
        t.ok(
          outs.every((o) => o.status === 'success'),
          'every message accepted',
        );
        // A retry of one of them within the deduplication window is accepted and not delivered again.
        t.match(await deliver(target, events[4] as (typeof events)[number]), { status: 'success' });
        const got: Array<{ body: string; group?: string; dedup?: string }> = [];
        for (;;) {
          const r = await admin.send(
            new ReceiveMessageCommand({
              QueueUrl: String(q.QueueUrl),
              MaxNumberOfMessages: 10,
              MessageSystemAttributeNames: ['MessageGroupId', 'MessageDeduplicationId'],
              WaitTimeSeconds: 0,
              VisibilityTimeout: 300,
            }),
          );
          if (!r.Messages?.length) break;
          for (const m of r.Messages) {
            got.push({ body: m.Body ?? '', group: m.Attributes?.MessageGroupId, dedup: m.Attributes?.MessageDeduplicationId });
            // A FIFO group gives its next messages only once those received are gone.
            await admin.send(new DeleteMessageCommand({ QueueUrl: String(q.QueueUrl), ReceiptHandle: m.ReceiptHandle }));
          }
        }
        t.same(
          got.map((m) => m.body),
          events.map((e) => JSON.stringify(e.data)),
          'each message once, in the order of its batch',
        );
        t.ok(
          got.every((m) => m.group === target.id),
          'message group = the destination id',
        );
        t.same(
          got.map((m) => m.dedup),
          events.map((e) => e.id),
          'deduplication id = the event id',
        );
      },
    },
  });
}
