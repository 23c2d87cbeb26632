// SENDER_TYPES: a sender refuses to start with a type it cannot deliver, before it touches Kafka or
// Postgres, so deliveries of that type stay in their topic for a sender that can. (A name that is
// no destination type is refused with the configuration: shared/test/config.test.ts.)
import t from 'tap';
import { DESTINATION_TYPES } from '@switchyard/shared/model/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { Runtime } from '@switchyard/shared/runtime.ts';
import { testConfig } from '@switchyard/shared/testing/index.ts';
import { SETTINGS } from '@switchyard/shared/config/index.ts';
import { implementedTypes, lazily, SENDERS } from '../src/senders.ts';
import { succeeded } from '../src/sender.ts';
import { start } from '../src/service.ts';

/** A runtime whose bus and database record any use, so the test can say nothing was touched. */
function runtime(senderTypes: string) {
  const touched: string[] = [];
  const untouchable = (name: string) =>
    new Proxy(
      {},
      {
        get: (_, prop) => {
          touched.push(`${name}.${String(prop)}`);
          throw new Error(`${name} used`);
        },
      },
    );
  const rt = {
    config: testConfig({ SENDER_TYPES: senderTypes }),
    logger: createLogger('sender', 'silent'),
    db: untouchable('db'),
    bus: untouchable('bus'),
    cipher: untouchable('cipher'),
    tracing: null,
    mode: { log: 'kafka', db: 'postgres' },
    close: async () => {},
  } as unknown as Runtime;
  return { rt, touched };
}

t.test('a type without a sender is refused by name, with nothing consumed', async (t) => {
  // Every type has a sender now; take one away to see the refusal a partial build would give.
  const kafka = SENDERS.kafka;
  delete SENDERS.kafka;
  t.teardown(() => {
    SENDERS.kafka = kafka;
  });
  const { rt, touched } = runtime('webhook,kafka');
  await t.rejects(start(rt), /delivery for type kafka is not implemented yet/);
  t.same(touched, [], 'neither Kafka nor Postgres was used');
});

t.test('the default SENDER_TYPES is every type a sender is built for', async (t) => {
  t.same([...SETTINGS.SENDER_TYPES.default.split(',')].sort(), implementedTypes().sort());
  t.same(implementedTypes(), [...DESTINATION_TYPES], 'every destination type is delivered, in the registry order');
});

t.test('a lazily loaded type loads on its first delivery, and again after a failed load', async (t) => {
  const events: string[] = [];
  let fail = true;
  const typeSender = lazily(async () => {
    events.push('load');
    if (fail) throw new Error('cannot load');
    return {
      open: (target) => {
        events.push(`open ${target.id}`);
        return { deliver: async () => succeeded(), close: async () => void events.push(`close ${target.id}`) };
      },
      close: async () => void events.push('close type'),
    };
  });
  const client = typeSender.open({ id: 'd1', tenant_id: 't', type: 'sqs', config: {}, credentials: {} });
  t.same(events, [], 'opening a client loads nothing');
  const delivery = { event: {} as never, deliveryMetadata: {}, signal: new AbortController().signal };
  await t.rejects(client.deliver(delivery), /cannot load/, 'a failed load fails that delivery');
  fail = false;
  t.same(await client.deliver(delivery), succeeded(), 'the next delivery loads again and delivers');
  await client.deliver(delivery);
  await client.close();
  await typeSender.close();
  t.same(events, ['load', 'load', 'open d1', 'close d1', 'close type'], 'loaded and opened once it worked');
});

t.test('at start a sender loads none of the SDK-backed types', async (t) => {
  // A fresh process: which of the types' SDKs did importing the service pull in?
  const { execFileSync } = await import('node:child_process');
  const probe = `
    await import(${JSON.stringify(new URL('../src/service.ts', import.meta.url).href)});
    const { createRequire } = await import('node:module');
    const cache = Object.keys(createRequire(import.meta.url).cache);
    console.log(JSON.stringify(['@aws-sdk', '@azure', '@google-cloud', 'amqplib', 'kafkajs'].filter((m) => cache.some((p) => p.includes('/node_modules/' + m)))));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
  t.same(JSON.parse(out.trim().split('\n').pop() ?? '[]'), []);
});

t.test('the kafka type applies the kafkajs idle-poll fix itself (embedded mode never loads the Kafka bus)', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const probe = `
    await import(${JSON.stringify(new URL('../src/kafka/sender.ts', import.meta.url).href)});
    const { createRequire } = await import('node:module');
    const RequestQueue = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js');
    console.log(String(RequestQueue.prototype[Symbol.for('switchyard.kafkajs.idlePollFixed')] === true));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', probe], {
    encoding: 'utf8',
    cwd: new URL('..', import.meta.url),
  });
  t.equal(out.trim().split('\n').pop(), 'true');
});
