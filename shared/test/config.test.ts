import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { renderEnvExample } from '../../infra/env-example.ts';
import {
  ConfigError,
  describeConfig,
  loadConfig,
  loadServiceConfig,
  SECTIONS,
  SERVICE_SECTIONS,
  SETTINGS,
  settingsOf,
} from '../src/config/index.ts';

const required = { API_KEY: 'k', API_JWT_SECRET: 'j'.repeat(32), AES_ENCRYPTION_SECRET: 'a'.repeat(32) };

/** The problems loadConfig reports for `env` (with the required settings), [] when it loads. */
function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig({ ...required, ...env });
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems;
  }
}

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

t.test('a bad entry of a list of numbers is named once; an empty allowed value is shown as such', async (t) => {
  const err = t.throws(() => loadConfig({ ...required, RETRY_SCHEDULE: '1,abc', PORTAL_FORCE_THEME: 'blue' })) as ConfigError;
  t.same(err.problems, [
    'RETRY_SCHEDULE: "abc" is not a whole number of seconds',
    'PORTAL_FORCE_THEME: must be one of "" (empty), light, dark',
  ]);
});

t.test('the problems make one line', async (t) => {
  const err = t.throws(() => loadConfig({ ...required, API_PORT: 'abc', LOG_LEVEL: 'loud' })) as ConfigError;
  t.equal(
    err.message,
    'invalid configuration: LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent; API_PORT: must be integer',
  );
  t.notMatch(err.message, '\n');
});

t.test('secrets shorter than the minimum are refused, naming the minimum', async (t) => {
  t.same(problemsOf({ AES_ENCRYPTION_SECRET: 'short' }), [
    'AES_ENCRYPTION_SECRET: must be at least 32 characters (for example: openssl rand -base64 32)',
  ]);
  t.same(problemsOf({ API_JWT_SECRET: 'x' }), ['API_JWT_SECRET: must be at least 32 characters (for example: openssl rand -base64 32)']);
  t.same(problemsOf({ API_JWT_SECRET: 'x'.repeat(31) }).length, 1, '31 characters: one short');
  t.same(problemsOf({ API_JWT_SECRET: 'x'.repeat(32), AES_ENCRYPTION_SECRET: 'y'.repeat(32) }), [], '32 characters pass');
  t.same(problemsOf({ AES_ENCRYPTION_SECRET_PREVIOUS: 'old' }), [], 'a short previous key stays readable, so it can be rotated away');
  t.notMatch(problemsOf({ AES_ENCRYPTION_SECRET: 'short' }).join(), 'short', 'the value is not echoed');
});

t.test('Kafka broker lists must be host:port entries', async (t) => {
  t.same(problemsOf({ KAFKA_BROKERS: 'nonsense' }), ['KAFKA_BROKERS: "nonsense" is not host:port (a port from 1 to 65535)']);
  for (const bad of ['h:0', 'h:65536', 'h:', ':9092', 'h:port', 'a b:9092', 'h:9092,other']) {
    t.equal(problemsOf({ KAFKA_BROKERS: bad }).length, 1, `${bad} is refused`);
  }
  for (const good of ['127.0.0.1:9092', 'kafka-0.kafka.svc:9092, kafka-1:19092', '[::1]:9092', 'h:1,h:65535']) {
    t.same(problemsOf({ KAFKA_BROKERS: good }), [], `${good} loads`);
  }
});

t.test('KAFKA_MIN_INSYNC_REPLICAS may not be above KAFKA_REPLICATION_FACTOR', async (t) => {
  t.same(
    problemsOf({ KAFKA_REPLICATION_FACTOR: '1' }),
    [
      'KAFKA_MIN_INSYNC_REPLICAS: 2 is above KAFKA_REPLICATION_FACTOR (1), so no write could ever be accepted; at most 1 (a single broker: both 1)',
    ],
    "a single broker's replication factor without its min.insync.replicas",
  );
  t.equal(problemsOf({ KAFKA_MIN_INSYNC_REPLICAS: '5' }).length, 1, '5 of the default 3');
  for (const [rf, isr] of [
    ['1', '1'],
    ['3', '2'],
    ['3', '3'],
  ])
    t.same(problemsOf({ KAFKA_REPLICATION_FACTOR: rf as string, KAFKA_MIN_INSYNC_REPLICAS: isr as string }), [], `${isr} of ${rf}`);
  t.same(problemsOf({ KAFKA_REPLICATION_FACTOR: 'x', KAFKA_MIN_INSYNC_REPLICAS: '2' }).length, 1, 'a bad factor is named once, on its own');
});

t.test('URLs are checked at load; an unparseable DATABASE_URL is refused, not taken for localhost', async (t) => {
  t.same(problemsOf({ DATABASE_URL: 'nonsense' }), [
    'DATABASE_URL: must be a postgres:// (or postgresql://) URL, such as postgres://user:password@host:5432/database',
  ]);
  t.equal(problemsOf({ DATABASE_URL: 'postgres://u:p@h:99999/db' }).length, 1, 'a port out of range');
  t.equal(problemsOf({ DATABASE_URL: 'mysql://h/db' }).length, 1, 'another scheme');
  for (const good of [
    'postgres://postgres@127.0.0.1:5432/switchyard',
    'postgresql://u:p%40ss@db.example.com/x?sslmode=require',
    'postgres://u@/db?host=/var/run/postgresql',
    'postgres://u:p@[::1]:5432/x',
  ]) {
    t.same(problemsOf({ DATABASE_URL: good }), [], `${good} loads`);
  }
  t.notMatch(problemsOf({ DATABASE_URL: 'secret-password' }).join(), 'secret-password', 'the value is not echoed');
  for (const name of [
    'API_BASE_URL',
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'OPERATOR_CALLBACK_URL',
    'EVENT_GATEWAY_BASE_URL',
    'EVENT_GATEWAY_VERIFY_URL',
  ]) {
    // The callback's secret beside it: a callback URL needs one (checked below).
    const withSecret = { OPERATOR_CALLBACK_SECRET: 'k' };
    t.same(
      problemsOf({ ...withSecret, [name]: 'not a url' }),
      [`${name}: must be an absolute http:// or https:// URL`],
      `${name} is checked`,
    );
    t.equal(problemsOf({ ...withSecret, [name]: 'ftp://h/x' }).length, 1, `${name}: http(s) only`);
  }
  t.same(
    problemsOf({ EVENT_GATEWAY_VERIFY_URL: 'https://api.example.com/sources/{source_id}', API_BASE_URL: '' }),
    [],
    'valid and empty ones load',
  );
  t.same(problemsOf({ CORS_ALLOWED_ORIGINS: 'https://app.example.com,http://localhost:5173' }), [], 'origins load');
  t.same(problemsOf({ CORS_ALLOWED_ORIGINS: '*' }), [], '* loads');
  t.same(problemsOf({ CORS_ALLOWED_ORIGINS: 'https://app.example.com/,app.example.com' }), [
    'CORS_ALLOWED_ORIGINS: "https://app.example.com/" is not an origin (scheme://host[:port], or *)',
    'CORS_ALLOWED_ORIGINS: "app.example.com" is not an origin (scheme://host[:port], or *)',
  ]);
});

t.test('listen hosts: an address or a host name, nothing around it', async (t) => {
  for (const host of ['127.0.0.1', '0.0.0.0', '::', '::1', 'localhost', 'api.internal']) {
    t.same(problemsOf({ API_HOST: host, METRICS_HOST: host }), [], `${host} loads`);
  }
  for (const host of ['127.0.0.1 ', '[::1]', 'http://0.0.0.0', '0.0.0.0:3333']) {
    t.same(
      problemsOf({ API_HOST: host, METRICS_HOST: host }),
      [
        'METRICS_HOST: must be an address or host name of this host, such as 127.0.0.1, 0.0.0.0 or ::',
        'API_HOST: must be an address or host name of this host, such as 127.0.0.1, 0.0.0.0 or ::',
      ],
      `${JSON.stringify(host)} is refused`,
    );
  }
});

t.test('operator callbacks are signed: a callback URL needs its secret', async (t) => {
  t.same(problemsOf({ OPERATOR_CALLBACK_URL: 'https://ops.example.com/hook' }), [
    'OPERATOR_CALLBACK_SECRET: is required when OPERATOR_CALLBACK_URL is set (callbacks are signed with it: signed with an empty key, anyone could forge one)',
  ]);
  t.same(problemsOf({ OPERATOR_CALLBACK_URL: 'https://ops.example.com/hook', OPERATOR_CALLBACK_SECRET: 'k' }), [], 'with it: loads');
  t.same(problemsOf({ OPERATOR_CALLBACK_SECRET: '' }), [], 'neither: loads');
});

t.test("NODE_EXTRA_CA_CERTS (Node's) must be a readable file of PEM certificates", async (t) => {
  const dir = t.testdir({ 'ca.pem': '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n', 'empty.pem': '' });
  t.same(problemsOf({ NODE_EXTRA_CA_CERTS: `${dir}/ca.pem` }), [], 'a bundle loads');
  t.same(problemsOf({ NODE_EXTRA_CA_CERTS: `${dir}/missing.pem` }), [`NODE_EXTRA_CA_CERTS: cannot read ${dir}/missing.pem (ENOENT)`]);
  t.same(problemsOf({ NODE_EXTRA_CA_CERTS: `${dir}/empty.pem` }), [`NODE_EXTRA_CA_CERTS: ${dir}/empty.pem holds no PEM certificate`]);
});

t.test('a required setting set empty is named as required', async (t) => {
  t.same(problemsOf({ API_KEY: '', API_JWT_SECRET: '' }), ['API_KEY: is required', 'API_JWT_SECRET: is required']);
});

t.test('a command may read only the settings it uses', async (t) => {
  const c = loadConfig({ DATABASE_URL: 'postgres://h/db' }, ['DATABASE_URL', 'DATABASE_POOL_MAX']);
  t.same(c, { DATABASE_URL: 'postgres://h/db', DATABASE_POOL_MAX: 10 }, 'no secret required, nothing else read');
  const err = t.throws(() => loadConfig({ DATABASE_URL: 'nonsense', API_PORT: 'abc' }, ['DATABASE_URL'])) as ConfigError;
  t.equal(err.problems.length, 1, 'only the named settings are checked');
  t.throws(() => loadConfig({}, ['AES_ENCRYPTION_SECRET']), /AES_ENCRYPTION_SECRET: is required/);
});

t.test('each setting belongs to exactly one section', async (t) => {
  const names = Object.values(SECTIONS).flatMap((section) => Object.keys(section));
  t.equal(names.length, new Set(names).size, 'no setting in two sections (the later would hide the earlier)');
  t.same(names.sort(), Object.keys(SETTINGS).sort(), 'the catalogue is the sections together');
  t.same(settingsOf('embedded').sort(), Object.keys(SETTINGS).sort(), 'embedded mode reads every setting');
});

t.test('a service validates its own sections only', async (t) => {
  const env = { ...required, SENDER_CONCURRENCY: 'many', API_PORT: 'abc' };
  t.throws(() => loadServiceConfig('gateway', env), /^invalid configuration: API_PORT: must be integer$/, 'the gateway: its API_PORT');
  t.throws(() => loadServiceConfig('sender', env), /^invalid configuration: SENDER_CONCURRENCY: must be integer$/, 'the sender: its own');
  t.equal(
    loadServiceConfig('router', { AES_ENCRYPTION_SECRET: required.AES_ENCRYPTION_SECRET }).ROUTER_BATCH_WAIT_MS,
    10,
    'the router needs no API_KEY',
  );
  t.throws(() => loadServiceConfig('router', {}), /AES_ENCRYPTION_SECRET: is required/, 'common settings are checked everywhere');
  t.throws(() => loadServiceConfig('embedded', env), /API_PORT.*SENDER_CONCURRENCY/, 'embedded mode: every section');
});

t.test("a service's settings have the values the whole catalogue gives them", async (t) => {
  const env = { ...required, DELIVERY_TIMEOUT_SECONDS: '2', TOPICS: 'a,b', API_PORT: '4000', KAFKA_BROKERS: 'k:9092' };
  const all = loadConfig(env) as Record<string, unknown>;
  for (const service of Object.keys(SERVICE_SECTIONS)) {
    const own = loadServiceConfig(service, env) as Record<string, unknown>;
    t.same(
      settingsOf(service).filter((name) => !Object.is(own[name], all[name]) && JSON.stringify(own[name]) !== JSON.stringify(all[name])),
      [],
      `${service}: same values`,
    );
  }
});

t.test('reading a setting outside its sections throws, naming it', async (t) => {
  const c = loadServiceConfig('gateway', required);
  t.equal(c.API_PORT, 3333);
  t.throws(() => c.SENDER_CONCURRENCY, /SENDER_CONCURRENCY is not a setting the gateway reads/);
  t.notOk(Object.keys(c).includes('SENDER_CONCURRENCY'), 'nor listed');
  t.ok(Object.isFrozen(c));
  t.notMatch(JSON.stringify(describeConfig(c)), required.API_KEY, 'still masked');
});

// What each service's code reads (`config.NAME`, `rt.config.NAME`...) must be in its sections: the
// throwing read above would otherwise be found by a request, not by this test.
t.test("each service's code reads only settings of its sections", async (t) => {
  const root = new URL('../../services/', import.meta.url).pathname;
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
    );
  for (const service of Object.keys(SERVICE_SECTIONS)) {
    const allowed = new Set<string>(settingsOf(service));
    const read = new Set<string>();
    for (const file of files(join(root, service, 'src'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\bconfig\.([A-Z][A-Z0-9_]+)\b/g))
        if (m[1] !== undefined && m[1] in SETTINGS) read.add(m[1]);
    }
    t.ok(read.size > 0, `${service} reads settings`);
    t.same(
      [...read].filter((name) => !allowed.has(name)),
      [],
      `${service}: outside its sections`,
    );
  }
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
