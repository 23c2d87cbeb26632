// The kafka type against the test broker's SASL listener (KAFKA_SASL_PORT, infra/test.sh) with a
// wrong password: every delivery is refused as unauthorized, however close together they come.
// A client that authenticated again on the connection whose authentication failed, which the
// broker closes a moment later, would answer a network error instead.
import t from 'tap';
import { parseAllowList } from '../src/egress.ts';
import { createKafkaSender } from '../src/kafka/sender.ts';
import { sampleEvent } from './conformance/suite.ts';

const REFUSED = {
  reason: 'unauthorized',
  message: 'SASL PLAIN authentication failed: Authentication failed: Invalid username or password',
};

t.test('a wrong password is unauthorized for every delivery, one after another and at once', async (t) => {
  const saslPort = process.env.KAFKA_SASL_PORT;
  if (!saslPort) throw new Error('KAFKA_SASL_PORT is not set: run this through npm test (infra/test.sh)');
  const sender = createKafkaSender({ allow: parseAllowList(['127.0.0.0/8']) });
  const client = sender.open({
    id: 'des_wrong_password',
    tenant_id: 'acme',
    type: 'kafka',
    config: { brokers: `127.0.0.1:${saslPort}`, topic: 'never-written', sasl_mechanism: 'plain', tls: false },
    credentials: { username: 'switchyard', password: 'not-the-password' },
  });
  t.teardown(async () => {
    await client.close();
    await sender.close();
  });
  const deliver = () => client.deliver({ event: sampleEvent(), deliveryMetadata: {}, signal: AbortSignal.timeout(20_000) });
  const answers = [];
  for (let i = 0; i < 5; i++) answers.push((await deliver()).response_data);
  answers.push(...(await Promise.all([deliver(), deliver(), deliver()])).map((o) => o.response_data));
  t.same(answers, Array(8).fill(REFUSED), 'each of eight deliveries');
});
