import { readFileSync } from 'node:fs';
import t from 'tap';
import { renderEnvExample } from '../../infra/env-example.ts';
import { ConfigError, describeConfig, loadConfig } from '../src/config/index.ts';

const required = { API_KEY: 'k', API_JWT_SECRET: 'j', AES_ENCRYPTION_SECRET: 'a' };

t.test('defaults apply and values are typed and frozen', async (t) => {
  const c = loadConfig({ ...required, TOPICS: 'a, b ,c', RETRY_SCHEDULE: '1,5,30', ALERT_AUTO_DISABLE_DESTINATION: 'true' });
  t.equal(c.API_PORT, 3333);
  t.same(c.TOPICS, ['a', 'b', 'c']);
  t.same(c.RETRY_SCHEDULE, [1, 5, 30]);
  t.equal(c.ALERT_AUTO_DISABLE_DESTINATION, true);
  t.equal(c.MAX_DESTINATIONS_PER_TENANT, 20);
  t.ok(Object.isFrozen(c));
});

t.test('every problem is reported at once and no value is echoed', async (t) => {
  try {
    loadConfig({ API_PORT: 'eighty', LOG_LEVEL: 'loud', RETRY_SCHEDULE: '1,x', ALERT_AUTO_DISABLE_DESTINATION: 'maybe', API_KEY: '' });
    t.fail('should throw');
  } catch (err) {
    t.ok(err instanceof ConfigError);
    const problems = (err as ConfigError).problems.join('\n');
    for (const name of [
      'API_PORT',
      'LOG_LEVEL',
      'RETRY_SCHEDULE',
      'ALERT_AUTO_DISABLE_DESTINATION',
      'API_KEY',
      'API_JWT_SECRET',
      'AES_ENCRYPTION_SECRET',
    ]) {
      t.match(problems, name, `${name} is named`);
    }
    t.notMatch(problems, 'eighty', 'values are not echoed');
    t.match(problems, 'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent', 'an enum names what it allows');
  }
});

t.test('each entry of a list with allowed values is checked, with the other problems', async (t) => {
  const err = t.throws(() => loadConfig({ ...required, SENDER_TYPES: 'webhook,smtp', API_PORT: 'eighty' })) as ConfigError;
  t.same(err.problems, [
    'API_PORT: must be integer',
    'SENDER_TYPES: must be one of webhook, sqs, rabbitmq, gateway, kinesis, servicebus, s3, pubsub, kafka',
  ]);
  t.same(loadConfig({ ...required, SENDER_TYPES: 'webhook, sqs' }).SENDER_TYPES, ['webhook', 'sqs'], 'known types pass');
});

t.test('describeConfig masks secrets', async (t) => {
  const d = describeConfig(loadConfig({ ...required, API_KEY: 'super-secret-key' }));
  t.equal(d.API_KEY, '********');
  t.notMatch(JSON.stringify(d), 'super-secret-key');
});

t.test('.env.example documents every setting of the catalogue', async (t) => {
  t.equal(
    readFileSync(new URL('../../.env.example', import.meta.url), 'utf8'),
    renderEnvExample(),
    'run: node infra/env-example.ts > .env.example',
  );
});
