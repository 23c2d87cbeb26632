// Sender benchmark for the pubsub, servicebus and kafka types: one destination per type, events
// delivered through the type's sender and the client cache (as the delivery handler does) against the
// type's test peer on loopback, `--concurrency` at a time. Prints deliveries/s and latency
// percentiles per type. It measures the sender and its client library against a local peer, not the
// pipeline (bench/run.ts does that for webhooks) and not a cloud service.
//
//   bash infra/run.sh node bench/senders.ts [--events 2000] [--concurrency 8] [--types pubsub,servicebus,kafka]
//
// Kafka: a throwaway broker with a SASL listener is started (infra/kafka/kafka.sh) and stopped.
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PubSub } from '@google-cloud/pubsub';
import { Kafka, logLevel } from 'kafkajs';
import { createClientCache } from '../services/sender/src/clients.ts';
import { parseAllowList } from '../services/sender/src/egress.ts';
import { createKafkaSender } from '../services/sender/src/kafka/sender.ts';
import { createPubSubSender } from '../services/sender/src/pubsub/sender.ts';
import type { Target, TypeSender } from '../services/sender/src/sender.ts';
import { createServiceBusSender } from '../services/sender/src/servicebus/sender.ts';
import { freePort, ROOT } from '../shared/src/testing/index.ts';
import { startPubSubPeer } from '../shared/src/testing/peers/pubsub.ts';
import { startServiceBusPeer } from '../shared/src/testing/peers/servicebus.ts';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '8' },
    types: { type: 'string', default: 'pubsub,servicebus,kafka' },
  },
});
const events = Number(values.events);
const concurrency = Number(values.concurrency);
const types = String(values.types).split(',');
const allow = parseAllowList(['127.0.0.0/8']);

interface Setup {
  sender: TypeSender;
  target: Target;
  close(): Promise<void>;
}

async function pubsubSetup(): Promise<Setup> {
  const peer = await startPubSubPeer();
  const admin = new PubSub({ projectId: 'bench-project', apiEndpoint: peer.host, emulatorMode: true });
  await admin.createTopic('bench');
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
  return {
    sender: createPubSubSender({ allow }),
    target: {
      id: 'des_bench_pubsub',
      tenant_id: 'bench',
      type: 'pubsub',
      config: { project_id: 'bench-project', topic: 'bench', endpoint: peer.host },
      credentials: {
        service_account_json: JSON.stringify({
          type: 'service_account',
          client_email: 'b@bench-project.iam.gserviceaccount.com',
          private_key: key,
        }),
      },
    },
    async close() {
      await admin.close();
      await peer.close();
    },
  };
}

async function servicebusSetup(): Promise<Setup> {
  const peer = await startServiceBusPeer({ entities: ['bench'] });
  return {
    sender: createServiceBusSender({ allow }),
    target: {
      id: 'des_bench_sb',
      tenant_id: 'bench',
      type: 'servicebus',
      config: { name: 'bench' },
      credentials: { connection_string: peer.connectionString() },
    },
    async close() {
      peer.received.length = 0;
      await peer.close();
    },
  };
}

async function kafkaSetup(): Promise<Setup> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-kafka-'));
  const env = {
    ...process.env,
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    KAFKA_SASL_PORT: String(await freePort()),
    KAFKA_SASL_USERS: 'bench:bench-secret',
    KAFKA_DATA_DIR: dir,
  };
  const sh = (cmd: string) =>
    execFileSync('bash', [join(ROOT, 'infra/kafka/kafka.sh'), cmd], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  sh('start');
  const admin = new Kafka({ clientId: 'bench', brokers: [`127.0.0.1:${env.KAFKA_PORT}`], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'bench', numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  return {
    sender: createKafkaSender({ allow }),
    target: {
      id: 'des_bench_kafka',
      tenant_id: 'bench',
      type: 'kafka',
      config: { brokers: `127.0.0.1:${env.KAFKA_SASL_PORT}`, topic: 'bench', sasl_mechanism: 'scram-sha-512', tls: false },
      credentials: { username: 'bench', password: 'bench-secret' },
    },
    async close() {
      sh('stop');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const SETUPS: Record<string, () => Promise<Setup>> = { pubsub: pubsubSetup, servicebus: servicebusSetup, kafka: kafkaSetup };

async function measure(type: string) {
  const setup = await (SETUPS[type] ?? (() => Promise.reject(new Error(`unknown type ${type}`))))();
  const cache = createClientCache(setup.sender);
  const destination = {
    id: setup.target.id,
    tenant_id: 'bench',
    type: setup.target.type,
    config: { ...setup.target.config },
    credentials: null,
    delivery_metadata: null,
  };
  let n = 0;
  const deliverOne = async () => {
    const i = n++;
    const started = performance.now();
    const out = await cache.deliver({
      event: {
        id: `evt_bench_${i}`,
        tenant_id: 'bench',
        topic: 'bench.event',
        time: new Date().toISOString(),
        eligible_for_retry: true,
        metadata: { i },
        data: { i, payload: 'x'.repeat(512) },
      },
      destination,
      credentials: setup.target.credentials,
      deliveryMetadata: {},
      signal: AbortSignal.timeout(10_000),
    });
    if (out.status !== 'success') throw new Error(`${type}: ${JSON.stringify(out.response_data)}`);
    return performance.now() - started;
  };
  const run = async (count: number) => {
    const latencies: number[] = [];
    let left = count;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) latencies.push(await deliverOne());
      }),
    );
    return latencies;
  };
  try {
    await run(Math.min(200, events));
    const started = performance.now();
    const latencies = (await run(events)).sort((a, b) => a - b);
    const seconds = (performance.now() - started) / 1000;
    const p = (q: number) => (latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0).toFixed(1);
    return { type, events, concurrency, per_second: Math.round(events / seconds), p50_ms: p(0.5), p99_ms: p(0.99) };
  } finally {
    await cache.close();
    await setup.close();
  }
}

const rows = [];
for (const type of types) rows.push(await measure(type));
console.log('type        deliveries/s  p50 ms  p99 ms   (events, concurrency)');
for (const r of rows) {
  console.log(
    `${r.type.padEnd(12)}${String(r.per_second).padStart(12)}  ${r.p50_ms.padStart(6)}  ${r.p99_ms.padStart(6)}   (${r.events}, ${r.concurrency})`,
  );
}
