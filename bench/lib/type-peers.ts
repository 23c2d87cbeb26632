// Local peers for the destination-type scenarios (`--scenario types`): each type's test peer from
// shared/src/testing/peers (the ones the sender's conformance suite runs against), started by the
// runner for one phase and stopped after it, and the destinations of that type pointed at it. The
// peers measure our sender and its client library against a local server, not a cloud service.
import { createServer } from 'node:http';
import { CreateStreamCommand, KinesisClient } from '@aws-sdk/client-kinesis';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { PubSub } from '@google-cloud/pubsub';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import amqp from 'amqplib';
import kafkajs from 'kafkajs';
import { freePort, listenLocal, type Teardown } from '../../shared/src/testing/index.ts';
import { startAwsGate } from '../../shared/src/testing/peers/aws-gate.ts';
import { startElasticMq } from '../../shared/src/testing/peers/elasticmq.ts';
import { startKinesalite } from '../../shared/src/testing/peers/kinesalite.ts';
import { startPubSubPeer } from '../../shared/src/testing/peers/pubsub.ts';
import { startRabbitMq } from '../../shared/src/testing/peers/rabbitmq.ts';
import { startS3Peer } from '../../shared/src/testing/peers/s3.ts';
import { startServiceBusPeer } from '../../shared/src/testing/peers/servicebus.ts';
import type { BenchType } from './scenarios.ts';

export interface DestinationSpec {
  config: Record<string, unknown>;
  credentials?: Record<string, unknown>;
}

export interface TypePeer {
  /** Service environment the type needs (the gateway type's base URL). */
  env: Record<string, string>;
  /** The k-th destination of the phase's tenant, its resource created on the peer. */
  destination(k: number): Promise<DestinationSpec>;
  /** Requests the destinations' credentials made at the peer so far (the AWS types: counted by the gate). */
  requests?(): number;
  /** TCP connections accepted by the peer so far (the AWS types: counted by the gate), to show keep-alive reuse. */
  connections?(): number;
}

/** Requests at the gate signed by the destinations' keys (not the runner's own admin calls). */
const destinationRequests = (seenBy: ReadonlyMap<string, number>) => () =>
  [...seenBy].reduce((n, [key, count]) => (key === ADMIN.accessKeyId ? n : n + count), 0);

const ADMIN = { accessKeyId: 'AKIDADMIN', secretAccessKey: 'admin-secret' };
const PROJECT = 'switchyard-bench';

/** A service-account JSON the create route accepts (the emulator endpoint never checks it). */
async function serviceAccount(): Promise<string> {
  const { generateKeyPairSync } = await import('node:crypto');
  return JSON.stringify({
    type: 'service_account',
    project_id: PROJECT,
    private_key: generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
    client_email: `bench@${PROJECT}.iam.gserviceaccount.com`,
  });
}

/** Starts `type`'s peer (webhook: none, the runner's receiver serves it); `t` stops it. */
export async function startTypePeer(
  type: Exclude<BenchType, 'webhook'>,
  t: Teardown,
  o: { kafkaBrokers: string; kafkaSaslBrokers: string },
): Promise<TypePeer> {
  const run = Date.now().toString(36);
  switch (type) {
    case 'sqs': {
      const emqPort = await freePort();
      const gate = await startAwsGate(t, {
        upstream: { host: '127.0.0.1', port: emqPort },
        protocol: 'json',
        throttleCode: 'RequestThrottled',
      });
      await startElasticMq(t, { port: emqPort, publicPort: gate.port });
      gate.keys.set(ADMIN.accessKeyId, ADMIN.secretAccessKey);
      const admin = new SQSClient({ endpoint: gate.url, region: 'elasticmq', credentials: ADMIN });
      t.teardown(() => admin.destroy());
      return {
        env: {},
        requests: destinationRequests(gate.seenBy),
        connections: () => gate.connections,
        async destination(k) {
          const q = await admin.send(new CreateQueueCommand({ QueueName: `bench-${run}-${k}` }));
          gate.keys.set(`AKIDSQS${k}`, `sqs-secret-${k}`);
          return {
            config: { queue_url: String(q.QueueUrl), endpoint: gate.url, region: 'elasticmq' },
            credentials: { key: `AKIDSQS${k}`, secret: `sqs-secret-${k}` },
          };
        },
      };
    }
    case 'kinesis': {
      const k0 = await startKinesalite(t);
      const gate = await startAwsGate(t, {
        upstream: { host: '127.0.0.1', port: k0.port },
        protocol: 'json',
        throttleCode: 'ProvisionedThroughputExceededException',
      });
      gate.keys.set(ADMIN.accessKeyId, ADMIN.secretAccessKey);
      // HTTP/1.1: kinesalite does not speak the HTTP/2 the client would try (as the conformance fixture).
      const admin = new KinesisClient({
        endpoint: gate.url,
        region: 'us-east-1',
        credentials: ADMIN,
        requestHandler: new NodeHttpHandler(),
      });
      t.teardown(() => admin.destroy());
      return {
        env: {},
        requests: destinationRequests(gate.seenBy),
        connections: () => gate.connections,
        async destination(k) {
          const name = `bench-${run}-${k}`;
          await admin.send(new CreateStreamCommand({ StreamName: name, ShardCount: 1 }));
          gate.keys.set(`AKIDKIN${k}`, `kinesis-secret-${k}`);
          return {
            config: { stream_name: name, region: 'us-east-1', endpoint: gate.url },
            credentials: { key: `AKIDKIN${k}`, secret: `kinesis-secret-${k}` },
          };
        },
      };
    }
    case 's3': {
      const s3 = await startS3Peer(t);
      const gate = await startAwsGate(t, {
        upstream: { host: '127.0.0.1', port: s3.port },
        protocol: 's3',
        throttleCode: 'SlowDown',
        throttleStatus: 503,
      });
      gate.keys.set(ADMIN.accessKeyId, ADMIN.secretAccessKey);
      const admin = new S3Client({ endpoint: gate.url, region: 'us-east-1', credentials: ADMIN, forcePathStyle: true });
      t.teardown(() => admin.destroy());
      return {
        env: {},
        requests: destinationRequests(gate.seenBy),
        connections: () => gate.connections,
        async destination(k) {
          const bucket = `bench-${run}-${k}`;
          await admin.send(new CreateBucketCommand({ Bucket: bucket }));
          gate.keys.set(`AKIDS3${k}`, `s3-secret-${k}`);
          return {
            config: { bucket, region: 'us-east-1', endpoint: gate.url },
            credentials: { key: `AKIDS3${k}`, secret: `s3-secret-${k}` },
          };
        },
      };
    }
    case 'servicebus': {
      const entities = Array.from({ length: 10 }, (_, k) => `bench-${k}`);
      const peer = await startServiceBusPeer({ entities, keys: { SendOnly: 'c2VuZC1vbmx5LWtleQ==' } });
      t.teardown(() => peer.close());
      // The peer keeps what it received: a bounded run, but drop it as it comes to hold memory flat.
      const trim = setInterval(() => peer.received.splice(0), 1000);
      t.teardown(() => clearInterval(trim));
      return {
        env: {},
        async destination(k) {
          return {
            config: { name: `bench-${k % 10}` },
            credentials: { connection_string: peer.connectionString({ keyName: 'SendOnly' }) },
          };
        },
      };
    }
    case 'pubsub': {
      const peer = await startPubSubPeer();
      t.teardown(() => peer.close());
      const admin = new PubSub({ projectId: PROJECT, apiEndpoint: peer.host, emulatorMode: true });
      t.teardown(() => admin.close());
      const key = await serviceAccount();
      return {
        env: {},
        async destination(k) {
          const topic = `bench-${run}-${k}`;
          await admin.createTopic(topic);
          return { config: { project_id: PROJECT, topic, endpoint: peer.host }, credentials: { service_account_json: key } };
        },
      };
    }
    case 'rabbitmq': {
      const user = { name: 'bench', password: `bench-${run}` };
      const rabbit = await startRabbitMq(t, [user]);
      const conn = await amqp.connect({
        hostname: rabbit.host,
        port: rabbit.port,
        username: rabbit.admin.name,
        password: rabbit.admin.password,
      });
      t.teardown(() => conn.close().catch(() => {}));
      const ch = await conn.createChannel();
      return {
        env: {},
        async destination(k) {
          const exchange = `bench.${run}.${k}`;
          await ch.assertExchange(exchange, 'topic', { durable: true });
          // A bound queue, so the broker stores what it confirms; capped, so a long run stays bounded.
          const q = await ch.assertQueue(`${exchange}.q`, { durable: true, arguments: { 'x-max-length': 10_000 } });
          await ch.bindQueue(q.queue, exchange, '#');
          return {
            config: { server_url: rabbit.serverUrl, exchange, tls: 'false' },
            credentials: { username: user.name, password: user.password },
          };
        },
      };
    }
    case 'kafka': {
      const admin = new kafkajs.Kafka({
        clientId: 'switchyard-bench-types',
        brokers: o.kafkaBrokers.split(','),
        logLevel: kafkajs.logLevel.NOTHING,
      }).admin();
      await admin.connect();
      t.teardown(() => admin.disconnect());
      return {
        env: {},
        async destination(k) {
          const topic = `bench-dest-${run}-${k}`;
          // The broker answers UNKNOWN_TOPIC_OR_PARTITION for a moment after the create: wait it out.
          await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: false }).catch(() => false);
          for (let i = 0; ; i++) {
            try {
              await admin.fetchTopicOffsets(topic);
              break;
            } catch (err) {
              if (i >= 50) throw err;
              await new Promise((r) => setTimeout(r, 200));
            }
          }
          return {
            config: { brokers: o.kafkaSaslBrokers, topic, sasl_mechanism: 'scram-sha-512', tls: false },
            credentials: { username: 'switchyard', password: 'switchyard-secret' },
          };
        },
      };
    }
    case 'gateway': {
      // A local event gateway: answers every POST /<source id> as Hookdeck does. It does not check
      // the signature (the conformance suite does): its CPU would be the runner's, not the pipeline's.
      const server = createServer((req, res) => {
        req.resume();
        req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"SUCCESS"}'));
      });
      const { url: base } = await listenLocal(t, server);
      return {
        env: { EVENT_GATEWAY_BASE_URL: base, EVENT_GATEWAY_VERIFY_URL: '' },
        async destination(k) {
          return { config: {}, credentials: { token: Buffer.from(`src_bench_${k}:signing-key-${k}`).toString('base64') } };
        },
      };
    }
  }
}
