// Conformance fixture: servicebus, against the rhea Service Bus peer (shared/src/testing/peers/
// servicebus.ts: the $cbs put-token exchange with the SAS signature checked, named entities,
// ServerBusy on request). @azure/service-bus talks to it unchanged: only the connection string
// points at it, with the SDK's documented UseDevelopmentEmulator=true (AMQP without TLS).
import { startServiceBusPeer } from '@switchyard/shared/testing/peers/servicebus.ts';
import { parseAllowList } from '../../src/egress.ts';
import type { Target } from '../../src/sender.ts';
import { createServiceBusSender } from '../../src/servicebus/sender.ts';
import { conformance, type Received, sampleEvent } from './suite.ts';

const ENTITIES = Array.from({ length: 40 }, (_, i) => `queue-${i + 1}`);

conformance({
  type: 'servicebus',
  cases: {
    'an EntityPath in the connection string does not override name': async (t, peer, deliver) => {
      const base = await peer.destination();
      const target = {
        ...base,
        credentials: { connection_string: `${String(base.credentials.connection_string)};EntityPath=some-other-queue` },
      };
      t.match(await deliver(target, sampleEvent()), { status: 'success' });
      t.equal((await peer.received(target)).length, 1, 'delivered to the queue the name field says');
    },
  },
  async start(t) {
    const peer = await startServiceBusPeer({ entities: ENTITIES, keys: { SendOnly: 'c2VuZC1vbmx5LWtleQ==' } });
    t.teardown(() => peer.close());
    let n = 0;
    const destination = async (): Promise<Target> => {
      n++;
      const name = ENTITIES[n - 1];
      if (!name) throw new Error('servicebus fixture: out of entities');
      return {
        id: `des_sb_${n}`,
        tenant_id: 'acme',
        type: 'servicebus',
        config: { name },
        credentials: { connection_string: peer.connectionString({ keyName: 'SendOnly' }) },
      };
    };
    return {
      sender: createServiceBusSender({ allow: parseAllowList(['127.0.0.0/8']), operationTimeoutMs: 5000 }),
      destination,
      async received(target) {
        return peer.received
          .filter((m) => m.entity === target.config.name)
          .map(
            (m): Received => ({
              body: Buffer.isBuffer(m.body) ? m.body.toString('utf8') : JSON.stringify(m.body),
              metadata: Object.fromEntries(Object.entries(m.application_properties).map(([k, v]) => [k, String(v)])),
              extra: { contentType: m.content_type, messageId: m.message_id },
            }),
          );
      },
      pointAt: (target, host, port) => ({
        ...target,
        credentials: {
          connection_string: String(target.credentials.connection_string).replace(/Endpoint=sb:\/\/[^;]+/, `Endpoint=sb://${host}:${port}`),
        },
      }),
      async rotate(good) {
        peer.keys.SendOnly = Buffer.from(`rotated-${Date.now()}`).toString('base64');
        return { ...good, credentials: { connection_string: peer.connectionString({ keyName: 'SendOnly' }) } };
      },
      failures: {
        unauthorized: async (good) => ({
          target: { ...good, credentials: { connection_string: peer.connectionString({ keyName: 'SendOnly', key: 'd3Jvbmc=' }) } },
        }),
        not_found: async (good) => ({ target: { ...good, config: { name: 'no-such-queue' } } }),
        throttled: async (good) => {
          peer.busy.add(String(good.config.name));
          return { target: good, expect: { minRetryAfterMs: 10_000 } };
        },
        invalid_config: async (good) => ({
          target: { ...good, credentials: { connection_string: `Endpoint=sb://127.0.0.1:${peer.port};SharedAccessKeyName=SendOnly` } },
        }),
        egress_blocked: async (good) => ({
          target: {
            ...good,
            credentials: {
              connection_string: String(good.credentials.connection_string).replace(/Endpoint=sb:\/\/[^;]+/, 'Endpoint=sb://10.255.255.1'),
            },
          },
        }),
      },
      checkReceived(t, r, event) {
        t.equal(r.extra?.contentType, 'application/json', 'content type');
        t.equal(r.extra?.messageId, event.id, 'the message id is the event id');
      },
    };
  },
});
