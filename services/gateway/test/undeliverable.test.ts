// Configurations and credentials a destination could never deliver with, whatever its peer does,
// are refused when it is saved (create and PATCH share checkDestination), naming the field: before,
// each was stored and then failed every delivery, most of them retried for hours as a network error.
// And the forms the senders do take are not refused.
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import type { Problem } from '@switchyard/shared/errors.ts';
import type { DestinationType } from '@switchyard/shared/model/index.ts';
import { checkDestination } from '../src/destination-input.ts';
import { SERVICE_ACCOUNT_JSON } from './helpers.ts';

const aws = { key: 'AKIAEXAMPLE', secret: 'aws-secret-value-123' };
const BASE: Record<string, { config: Record<string, unknown>; credentials: Record<string, unknown> }> = {
  webhook: { config: { url: 'https://example.com/hook' }, credentials: {} },
  sqs: { config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' }, credentials: aws },
  kinesis: { config: { stream_name: 'events', region: 'us-east-1' }, credentials: aws },
  s3: { config: { bucket: 'my-bucket', region: 'us-east-1' }, credentials: aws },
  rabbitmq: { config: { server_url: 'mq.example.com:5672', exchange: 'events' }, credentials: { username: 'u', password: 'p' } },
  kafka: {
    config: { brokers: 'b1.example.com:9093', topic: 'events', sasl_mechanism: 'plain' },
    credentials: { username: 'u', password: 'p' },
  },
  pubsub: { config: { project_id: 'my-project', topic: 'events' }, credentials: { service_account_json: SERVICE_ACCOUNT_JSON } },
  gateway: { config: {}, credentials: { token: Buffer.from('src_1:signing-key').toString('base64') } },
  servicebus: {
    config: { name: 'q' },
    credentials: { connection_string: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=abc' },
  },
};

function problemsOf(type: string, change: { config?: Record<string, unknown>; credentials?: Record<string, unknown> }): Problem[] {
  const base = BASE[type] as (typeof BASE)[string];
  const problems: Problem[] = [];
  checkDestination(
    type as DestinationType,
    { config: { ...base.config, ...change.config }, credentials: { ...base.credentials, ...change.credentials }, filter: null },
    problems,
    'x-outpost-',
  );
  return problems;
}

const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' });

/** type, the change, the field refused, and what its message must say. */
const REFUSED: Array<[string, { config?: Record<string, unknown>; credentials?: Record<string, unknown> }, string, RegExp]> = [
  // AWS keys go into HTTP headers: a pasted line break failed every delivery as network_error.
  ['sqs', { credentials: { key: 'AKIAEXAMPLE\n' } }, 'body.credentials.key', /printable ASCII/],
  ['kinesis', { credentials: { session: 'tok\nen' } }, 'body.credentials.session', /printable ASCII/],
  ['s3', { credentials: { key: 'AKID☃' } }, 'body.credentials.key', /printable ASCII/],
  ['s3', { credentials: { secret: 'secret with spaces' } }, 'body.credentials.secret', /printable ASCII/],
  // A region is a host name label: the SDK refused these on every delivery.
  ['kinesis', { config: { region: '-' } }, 'body.config.region', /must match/],
  ['sqs', { config: { region: 'us-' } }, 'body.config.region', /must match/],
  // Sent to the URL's region, signed for another: AWS refused every request.
  ['sqs', { config: { region: 'eu-west-1' } }, 'body.config.region', /queue URL's region \(us-east-1\)/],
  ['s3', { config: { region: 'a'.repeat(64) } }, 'body.config.region', /must match/],
  // S3 never creates these buckets.
  ['s3', { config: { bucket: 'a..b' } }, 'body.config.bucket', /two dots/],
  ['s3', { config: { bucket: 'a.-b' } }, 'body.config.bucket', /dot next to a hyphen/],
  ['s3', { config: { bucket: '192.168.1.1' } }, 'body.config.bucket', /IP address/],
  ['s3', { config: { bucket: 'xn--abc' } }, 'body.config.bucket', /reserves/],
  ['s3', { config: { bucket: 'data-s3alias' } }, 'body.config.bucket', /reserves/],
  // AMQP counts 255 bytes, not characters: the client threw on every publish.
  ['rabbitmq', { config: { exchange: 'é'.repeat(200) } }, 'body.config.exchange', /255 bytes/],
  // kafkajs and the Pub/Sub client split an address at its first colon.
  ['kafka', { config: { brokers: '[::1]:9092' } }, 'body.config.brokers', /must match/],
  ['pubsub', { config: { endpoint: '[::1]:8085' } }, 'body.config.endpoint', /must match/],
  ['kafka', { config: { topic: '.' } }, 'body.config.topic', /must match/],
  ['kafka', { config: { topic: '..' } }, 'body.config.topic', /must match/],
  // Google's rules for topic ids, and the RS256 key its token endpoint takes.
  ['pubsub', { config: { topic: 'a/b' } }, 'body.config.topic', /must match/],
  ['pubsub', { config: { topic: 'ab' } }, 'body.config.topic', /must match/],
  ['pubsub', { config: { topic: 'goog-events' } }, 'body.config.topic', /goog/],
  [
    'pubsub',
    { credentials: { service_account_json: JSON.stringify({ ...JSON.parse(SERVICE_ACCOUNT_JSON), private_key: ecKey }) } },
    'body.credentials.service_account_json',
    /not an RSA key/,
  ],
  // Read as the Azure SDK reads a connection string.
  [
    'servicebus',
    { credentials: { connection_string: 'Endpoint=sb://;SharedAccessKeyName=a;SharedAccessKey=b' } },
    'body.credentials.connection_string',
    /Endpoint=sb:\/\/<namespace>/,
  ],
  [
    'servicebus',
    { credentials: { connection_string: 'Endpoint=sb://h/;sharedaccesskeyname=a;sharedaccesskey=b' } },
    'body.credentials.connection_string',
    /case-sensitive/,
  ],
  [
    'servicebus',
    { credentials: { connection_string: 'Endpoint=sb://h/;SharedAccessSignature=abc' } },
    'body.credentials.connection_string',
    /SharedAccessSignature sr=/,
  ],
  [
    'servicebus',
    {
      credentials: {
        connection_string: 'Endpoint=sb://h/;SharedAccessKeyName=a;SharedAccessKey=b;SharedAccessSignature=SharedAccessSignature sr=x',
      },
    },
    'body.credentials.connection_string',
    /not both/,
  ],
  // A gateway token is base64 of source_id:signing_key, as the other service checks it on save too.
  ['gateway', { credentials: { token: 'hello' } }, 'body.credentials.token', /source_id:signing_key/],
  ['gateway', { credentials: { token: Buffer.from('src:').toString('base64') } }, 'body.credentials.token', /source_id:signing_key/],
  [
    'gateway',
    { credentials: { token: `${Buffer.from('src:key').toString('base64')}\n` } },
    'body.credentials.token',
    /source_id:signing_key/,
  ],
  // The sender posts to the URL's origin and path: the credentials were never sent.
  ['webhook', { config: { url: 'https://user:pass@hooks.example.com/in' } }, 'body.config.url', /Authorization header/],
];

const ACCEPTED: Array<[string, { config?: Record<string, unknown>; credentials?: Record<string, unknown> }, string]> = [
  ['kafka', { config: { brokers: 'kafka_1:9092, kafka-2.internal:9092' } }, 'container names with _'],
  ['kafka', { config: { topic: '.events' } }, 'a topic starting with a dot'],
  ['pubsub', { config: { endpoint: 'pubsub_emulator:8085' } }, 'an emulator named with _'],
  ['sqs', { config: { region: 'elasticmq', queue_url: 'http://127.0.0.1:9324/000000000000/q' } }, "an emulator's region"],
  ['sqs', { config: { region: 'eu-west-1', endpoint: 'http://127.0.0.1:4566' } }, 'any region with an endpoint'],
  ['sqs', { config: { region: 'us-east-1' } }, "the URL's own region"],
  ['kinesis', { config: { region: 'us-gov-west-1' } }, 'a long region'],
  ['s3', { config: { bucket: 'my.bucket-1' } }, 'dots and hyphens apart'],
  ['rabbitmq', { config: { exchange: 'é'.repeat(127) } }, '254 bytes'],
  [
    'servicebus',
    {
      credentials: {
        connection_string: 'Endpoint=sb://ns.servicebus.windows.net/; SharedAccessSignature=SharedAccessSignature sr=a&sig=b&se=1&skn=k',
      },
    },
    'a SAS, a space before its name',
  ],
  ['webhook', { config: { url: 'https://hooks.example.com/in?token=abc' } }, 'a token in the query'],
];

t.test('what could never deliver is refused on save, naming the field', async (t) => {
  for (const [type, change, path, message] of REFUSED) {
    const problems = problemsOf(type, change);
    const hit = problems.find((p) => p.path === path);
    t.ok(hit, `${type} ${JSON.stringify(change).slice(0, 90)}: refused at ${path} (${JSON.stringify(problems)})`);
    t.match(hit?.message, message);
  }
});

t.test('the forms the senders take are accepted', async (t) => {
  for (const [type, change, what] of ACCEPTED) t.same(problemsOf(type, change), [], `${type}: ${what}`);
  for (const type of Object.keys(BASE)) t.same(problemsOf(type, {}), [], `${type}: the base configuration`);
});
