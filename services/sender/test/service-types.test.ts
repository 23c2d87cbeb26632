// SENDER_TYPES: a sender refuses to start with a type it cannot deliver, before it touches Kafka or
// Postgres, so deliveries of that type stay in their topic for a sender that can. (A name that is
// no destination type is refused with the configuration: shared/test/config.test.ts.)
import t from 'tap';
import { DESTINATION_TYPES } from '@switchyard/shared/model/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { Runtime } from '@switchyard/shared/runtime.ts';
import { testConfig } from '@switchyard/shared/testing/index.ts';
import { SETTINGS } from '@switchyard/shared/config/index.ts';
import { implementedTypes, SENDERS } from '../src/senders.ts';
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
