// Conformance fixture: pubsub, against the Pub/Sub test peer (infra/pubsub: Google's pstest serving
// the real Pub/Sub gRPC protocol) on a free loopback port; deliveries are read back with the official
// client's SubscriberClient from a subscription made per destination. The peer answers publishes to
// "denied-*" and "throttled-*" topics with PERMISSION_DENIED and RESOURCE_EXHAUSTED.
import { generateKeyPairSync } from 'node:crypto';
import { PubSub, v1 } from '@google-cloud/pubsub';
import { credentials } from '@grpc/grpc-js';
import { startPubSubPeer } from '@switchyard/shared/testing/peers/pubsub.ts';
import { parseAllowList } from '../../src/egress.ts';
import { createPubSubSender } from '../../src/pubsub/sender.ts';
import type { Target } from '../../src/sender.ts';
import { conformance, type Received, sampleEvent } from './suite.ts';

const PROJECT = 'switchyard-test';
const serviceAccount = (n: number) =>
  JSON.stringify({
    type: 'service_account',
    project_id: PROJECT,
    private_key: generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
    client_email: `publisher-${n}@${PROJECT}.iam.gserviceaccount.com`,
  });

conformance({
  type: 'pubsub',
  cases: {
    'an emulator endpoint takes the placeholder key (no credentials are sent without TLS)': async (t, peer, deliver) => {
      const base = await peer.destination();
      const target = { ...base, id: `${base.id}_placeholder`, credentials: { service_account_json: '{"type":"service_account"}' } };
      t.match(await deliver(target, sampleEvent()), { status: 'success' });
      t.equal((await peer.received(target)).length, 1, 'delivered');
    },
  },
  credentialsUnchecked:
    "an emulator endpoint (host:port, as Google's emulator and pstest take it) is reached without TLS, where the client sends no credentials; only Google checks them",
  async start(t) {
    const peer = await startPubSubPeer();
    t.teardown(() => peer.close());
    const [host, port] = peer.host.split(':');
    const admin = new PubSub({ projectId: PROJECT, apiEndpoint: peer.host, emulatorMode: true });
    const subscriber = new v1.SubscriberClient({ servicePath: host, port: Number(port), sslCreds: credentials.createInsecure() });
    t.teardown(async () => {
      await subscriber.close();
      await admin.close();
    });
    let n = 0;
    const key = serviceAccount(0);
    const destination = async (): Promise<Target> => {
      const topic = `conf-${++n}`;
      const [created] = await admin.createTopic(topic);
      await created.createSubscription(`${topic}-sub`);
      return {
        id: `des_ps_${n}`,
        tenant_id: 'acme',
        type: 'pubsub',
        // Every other destination says http://, to cover both forms of an emulator endpoint.
        config: { project_id: PROJECT, topic, endpoint: n % 2 ? peer.host : `http://${peer.host}` },
        credentials: { service_account_json: key },
      };
    };
    const got = new Map<string, Received[]>();
    const renamed = async (good: Target, prefix: string): Promise<Target> => {
      const topic = `${prefix}-${good.config.topic}`;
      await admin.createTopic(topic);
      return { ...good, config: { ...good.config, topic } };
    };
    return {
      sender: createPubSubSender({ allow: parseAllowList(['127.0.0.0/8']), requestTimeoutMs: 5000 }),
      destination,
      async received(target) {
        const topic = String(target.config.topic);
        const list = got.get(topic) ?? [];
        got.set(topic, list);
        const subscription = `projects/${PROJECT}/subscriptions/${topic}-sub`;
        const [res] = await subscriber.pull({ subscription, maxMessages: 100 });
        const messages = res.receivedMessages ?? [];
        for (const m of messages) {
          list.push({ body: Buffer.from(m.message?.data ?? '').toString('utf8'), metadata: { ...(m.message?.attributes ?? {}) } });
        }
        const ackIds = messages.map((m) => m.ackId).filter((a): a is string => typeof a === 'string');
        if (ackIds.length) await subscriber.acknowledge({ subscription, ackIds });
        return list;
      },
      pointAt: (target, h, p) => ({ ...target, config: { ...target.config, endpoint: `${h}:${p}` } }),
      async rotate(good) {
        return { ...good, credentials: { service_account_json: serviceAccount(++n) } };
      },
      failures: {
        // Answered by the peer by topic id (infra/pubsub/main.go), through the real protocol and client.
        unauthorized: async (good) => ({ target: await renamed(good, 'denied') }),
        throttled: async (good) => ({ target: await renamed(good, 'throttled') }),
        not_found: async (good) => ({ target: { ...good, config: { ...good.config, topic: 'no-such-topic' } } }),
        invalid_config: async (good) => ({ target: { ...good, credentials: { service_account_json: 'not json' } } }),
        egress_blocked: async (good) => ({ target: { ...good, config: { ...good.config, endpoint: '10.255.255.1:8085' } } }),
      },
    };
  },
});
