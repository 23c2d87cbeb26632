// Conformance fixture: rabbitmq, against a private node of Debian's rabbitmq-server (its own ports
// and directories). Rotation changes a user's password with rabbitmqctl; throttling is the broker's
// own: a memory alarm, during which it blocks publishers.
import amqp from 'amqplib';
import { type RabbitMq, type RabbitUser, startRabbitMq } from '@switchyard/shared/testing/peers/rabbitmq.ts';
import { waitFor } from '@switchyard/shared/testing/index.ts';
import { parseAllowList } from '../../src/egress.ts';
import { createRabbitSender } from '../../src/rabbitmq/sender.ts';
import type { Target } from '../../src/sender.ts';
import { conformance, type Received, sampleEvent } from './suite.ts';

const users: RabbitUser[] = Array.from({ length: 40 }, (_, i) => ({ name: `dest${i + 1}`, password: `pass-${i + 1}-${Date.now()}` }));

let broker: RabbitMq;

/** Connections of one user, as the broker lists them: [pid, user]. */
async function connectionsOf(user: string): Promise<string[][]> {
  const out = await broker.ctl('list_connections', 'pid', 'user');
  return out
    .split('\n')
    .map((l) => l.split('\t'))
    .filter((cols) => cols[1] === user)
    .map(([pid = '', u = '']) => [pid, u]);
}

conformance({
  type: 'rabbitmq',
  async start(t) {
    const rabbit = await startRabbitMq(t, users);
    broker = rabbit;
    const admin = await amqp.connect({
      hostname: rabbit.host,
      port: rabbit.port,
      username: rabbit.admin.name,
      password: rabbit.admin.password,
    });
    t.teardown(() => admin.close().catch(() => {}));
    const ch = await admin.createChannel();
    const queues = new Map<string, string>();
    const got = new Map<string, Received[]>();
    let n = 0;
    const alarmed = async (on: boolean) =>
      waitFor(
        `the memory alarm ${on ? 'on' : 'off'}`,
        async () => (await rabbit.ctl('eval', 'rabbit_alarm:get_alarms().')).includes('memory') === on,
        // Each check is a rabbitmqctl run (an Erlang VM start): seconds apiece on a busy host.
        120_000,
      );
    return {
      sender: createRabbitSender({ allow: parseAllowList(['127.0.0.0/8']), connectTimeoutMs: 5000 }),
      async destination(): Promise<Target> {
        const user = users[n++ % users.length] as RabbitUser;
        const exchange = `conf.${Date.now().toString(36)}.${n}`;
        await ch.assertExchange(exchange, 'topic', { durable: true });
        const q = await ch.assertQueue('', { exclusive: true });
        await ch.bindQueue(q.queue, exchange, '#');
        queues.set(exchange, q.queue);
        return {
          id: `des_rmq_${n}`,
          tenant_id: 'acme',
          type: 'rabbitmq',
          config: { server_url: rabbit.serverUrl, exchange, tls: 'false' },
          credentials: { username: user.name, password: user.password },
        };
      },
      async received(target) {
        const exchange = String(target.config.exchange);
        const list = got.get(exchange) ?? [];
        got.set(exchange, list);
        for (;;) {
          const m = await ch.get(queues.get(exchange) as string, { noAck: true });
          if (!m) break;
          list.push({
            body: m.content.toString('utf8'),
            metadata: Object.fromEntries(
              Object.entries(m.properties.headers ?? {}).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString('utf8') : String(v)]),
            ),
            extra: {
              routingKey: m.fields.routingKey,
              contentType: m.properties.contentType,
              deliveryMode: m.properties.deliveryMode,
              messageId: m.properties.messageId,
            },
          });
        }
        return list;
      },
      pointAt: (target, host, port) => ({ ...target, config: { ...target.config, server_url: `${host}:${port}` } }),
      async rotate(target) {
        const password = `rotated-${Date.now()}`;
        await rabbit.ctl('change_password', String(target.credentials.username), password);
        const u = users.find((x) => x.name === target.credentials.username);
        if (u) u.password = password;
        return { ...target, credentials: { ...target.credentials, password } };
      },
      failures: {
        unauthorized: async (good) => ({ target: { ...good, credentials: { ...good.credentials, password: 'not-the-password' } } }),
        not_found: async (good) => ({ target: { ...good, config: { ...good.config, exchange: 'no-such-exchange' } } }),
        throttled: async (good) => {
          await rabbit.ctl('set_vm_memory_high_watermark', '0.000001');
          await alarmed(true);
          return {
            target: good,
            cleanup: async () => {
              await rabbit.ctl('set_vm_memory_high_watermark', '0.4');
              await alarmed(false);
            },
          };
        },
        invalid_config: async (good) => ({ target: { ...good, config: { ...good.config, server_url: '127.0.0.1:99999' } } }),
        // A full queue that refuses new messages: the broker nacks the publish.
        rejected: async (good) => {
          const exchange = `${String(good.config.exchange)}.full`;
          await ch.assertExchange(exchange, 'topic', { durable: false, autoDelete: true });
          const q = await ch.assertQueue('', { exclusive: true, arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' } });
          await ch.bindQueue(q.queue, exchange, '#');
          return { target: { ...good, config: { ...good.config, exchange } } };
        },
      },
      checkReceived(t, r, event) {
        t.equal(r.extra?.routingKey, event.topic, 'routed by the event topic');
        t.equal(r.extra?.contentType, 'application/json');
        t.equal(r.extra?.deliveryMode, 2, 'persistent');
        t.equal(r.extra?.messageId, event.id);
      },
    };
  },
  cases: {
    'one connection per destination, opened again when lost, without losing the delivery': async (t, peer, deliver) => {
      const target = await peer.destination();
      const user = String(target.credentials.username);
      for (let i = 0; i < 3; i++) t.match(await deliver(target, sampleEvent()), { status: 'success' });
      const conns = await connectionsOf(user);
      t.equal(conns.length, 1, 'three deliveries, one connection');
      // The broker drops it; the next deliveries (at once, while the client may not know yet) still arrive.
      await broker.ctl('close_connection', conns[0]?.[0] ?? '', 'test: connection lost');
      const after = await Promise.all([1, 2, 3].map(() => deliver(target, sampleEvent())));
      t.ok(
        after.every((o) => o.status === 'success'),
        `delivered on a new connection: ${JSON.stringify(after.map((o) => o.response_data))}`,
      );
      t.equal((await peer.received(target)).length, 6, 'all six arrived');
      // Listing connections is a rabbitmqctl run too: bounded generously for a busy host.
      await waitFor('the old connection to go', async () => (await connectionsOf(user)).length === 1, 120_000);
    },
  },
});
