// Conformance fixture: kafka, against the project's test broker (infra/kafka) on its SASL_PLAINTEXT
// listener (KAFKA_SASL_PORT, started by infra/test.sh): SCRAM-SHA-512 user `conformance`, whose
// password rotate() changes with the broker's own tool. Deliveries are read back with kafkajs over
// the plain listener. Fails when the listener is missing: run it with `npm test -- <this file>`.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTopicReady } from '@switchyard/shared/testing/index.ts';
import { Kafka, logLevel } from 'kafkajs';
import { parseAllowList } from '../../src/egress.ts';
import { createKafkaSender } from '../../src/kafka/sender.ts';
import type { Target } from '../../src/sender.ts';
import { conformance, type Received, sampleEvent } from './suite.ts';

const KAFKA_SH = fileURLToPath(new URL('../../../../infra/kafka/kafka.sh', import.meta.url));

/** Resolves once `username`/`password` authenticate over SCRAM-SHA-512 at `broker`; throws after 60 s of refusals. */
async function signsIn(broker: string, username: string, password: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const admin = new Kafka({
      clientId: 'conformance-rotate',
      brokers: [broker],
      sasl: { mechanism: 'scram-sha-512', username, password },
      retry: { retries: 0 },
      logLevel: logLevel.NOTHING,
    }).admin();
    try {
      await admin.connect();
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`the new SCRAM password of ${username} was not applied within 60 s: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await admin.disconnect();
    }
  }
}

conformance({
  type: 'kafka',
  cannot: {
    throttled:
      'Kafka quotas throttle a producer by delaying its responses (throttle_time_ms), never by refusing a produce, so there is no throttling failure to show',
  },
  cases: {
    'partition_key_template is JMESPath over {data, metadata}': async (t, peer, deliver) => {
      const base = await peer.destination();
      const target = { ...base, config: { ...base.config, partition_key_template: "join('-', [metadata.source, data.name])" } };
      t.match(await deliver(target, sampleEvent()), { status: 'success' });
      const [r] = await peer.received(target);
      t.equal(r?.extra?.key, 'crm-Zoë', 'the key');
      const nothing = { ...base, id: `${base.id}_null`, config: { ...base.config, partition_key_template: 'data.missing' } };
      t.match(
        await deliver(nothing, sampleEvent()),
        { status: 'failed', retryable: true, response_data: { reason: 'rejected' } },
        'a template that gives nothing for an event refuses that event',
      );
      const wrong = { ...base, id: `${base.id}_wrong`, config: { ...base.config, partition_key_template: "join('-', data.name)" } };
      t.match(
        await deliver(wrong, sampleEvent()),
        {
          status: 'failed',
          retryable: true,
          response_data: { reason: 'rejected', message: /partition_key_template failed for this event/ },
        },
        'a template that fails on an event (join given a string) refuses that event',
      );
    },
    'every SASL mechanism: plain, scram-sha-256, scram-sha-512': async (t, peer, deliver) => {
      for (const sasl_mechanism of ['plain', 'scram-sha-256', 'scram-sha-512']) {
        const base = await peer.destination();
        const target = {
          ...base,
          id: `${base.id}_${sasl_mechanism}`,
          config: { ...base.config, sasl_mechanism },
          credentials: { username: 'switchyard', password: 'switchyard-secret' },
        };
        t.match(await deliver(target, sampleEvent()), { status: 'success' }, sasl_mechanism);
        t.equal((await peer.received(target)).length, 1, `${sasl_mechanism}: delivered`);
      }
    },
  },
  async start(t) {
    const plain = process.env.KAFKA_BROKERS;
    const saslPort = process.env.KAFKA_SASL_PORT;
    if (!plain || !saslPort) throw new Error('KAFKA_BROKERS and KAFKA_SASL_PORT are not set: run this through npm test (infra/test.sh)');
    const sasl = `127.0.0.1:${saslPort}`;
    const kafka = new Kafka({ clientId: 'conformance-admin', brokers: plain.split(','), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    t.teardown(() => admin.disconnect());
    let password = 'conformance-secret';
    let n = 0;
    const run = Date.now().toString(36);

    const destination = async (): Promise<Target> => {
      const topic = `conf-kafka-${run}-${++n}`;
      await createTopicReady(admin, topic, 1);
      return {
        id: `des_kafka_${n}`,
        tenant_id: 'acme',
        type: 'kafka',
        config: { brokers: sasl, topic, sasl_mechanism: 'scram-sha-512', tls: false },
        credentials: { username: 'conformance', password },
      };
    };

    const received = async (target: Target): Promise<Received[]> => {
      const topic = String(target.config.topic);
      const [p0] = await admin.fetchTopicOffsets(topic);
      const want = Number(p0?.high ?? 0);
      if (want === 0) return [];
      const out: Received[] = [];
      const consumer = kafka.consumer({ groupId: `conf-read-${run}-${++n}`, maxWaitTimeInMs: 100 });
      await consumer.connect();
      try {
        await consumer.subscribe({ topic, fromBeginning: true });
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`read ${out.length} of ${want} records of ${topic}`)), 20_000);
          consumer
            .run({
              eachMessage: async ({ message }) => {
                const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
                const { 'content-type': contentType, ...metadata } = headers;
                out.push({
                  body: message.value?.toString('utf8') ?? '',
                  metadata,
                  extra: { contentType, key: message.key?.toString('utf8') },
                });
                if (out.length >= want) {
                  clearTimeout(timer);
                  resolve();
                }
              },
            })
            .catch(reject);
        });
      } finally {
        await consumer.disconnect();
      }
      return out;
    };

    return {
      sender: createKafkaSender({ allow: parseAllowList(['127.0.0.0/8']), connectTimeoutMs: 3000, requestTimeoutMs: 5000 }),
      destination,
      received,
      pointAt: (target, host, port) => ({ ...target, config: { ...target.config, brokers: `${host}:${port}` } }),
      async rotate(good) {
        password = `conformance-${Date.now().toString(36)}`;
        await promisify(execFile)('bash', [KAFKA_SH, 'scram', 'conformance', password, 'SCRAM-SHA-512'], { timeout: 60_000 });
        // The controller took the change; the broker applies it from the metadata log a moment later
        // (seconds on a busy machine): the rotation is done once the new password signs in.
        await signsIn(sasl, 'conformance', password);
        return { ...good, credentials: { username: 'conformance', password } };
      },
      failures: {
        unauthorized: async (good) => ({ target: { ...good, credentials: { username: 'conformance', password: 'wrong-password' } } }),
        not_found: async (good) => ({ target: { ...good, config: { ...good.config, topic: `missing-${run}` } } }),
        invalid_config: async (good) => ({
          target: { ...good, config: { ...good.config, partition_key_template: 'data.[' } },
          expect: { retryable: false },
        }),
        egress_blocked: async (good) => ({ target: { ...good, config: { ...good.config, brokers: '10.255.255.1:9092' } } }),
      },
      checkReceived(t, r, event) {
        t.equal(r.extra?.contentType, 'application/json', 'content-type header');
        t.equal(r.extra?.key, event.id, 'the key is the event id by default');
      },
    };
  },
});
