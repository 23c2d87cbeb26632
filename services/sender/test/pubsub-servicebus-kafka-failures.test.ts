// How the pubsub, servicebus and kafka senders name failures their peers cannot be made to show
// (the conformance suite shows the others against real peers): each client library's error, as it
// throws it, to the reason of the contract's vocabulary. Also the small parsers of those senders.
import { ServiceBusError } from '@azure/service-bus';
import { compile } from '@jmespath-community/jmespath';
import t from 'tap';
import { kafkaFailure, keyOf } from '../src/kafka/sender.ts';
import { parseEndpoint, pubsubFailure } from '../src/pubsub/sender.ts';
import { endpointHost, serviceBusFailure, withoutEntityPath } from '../src/servicebus/sender.ts';

const live = new AbortController().signal;
const reasonOf = (o: { response_data: Record<string, unknown> | null }) => o.response_data?.reason;

t.test('pubsub: gRPC statuses', async (t) => {
  const grpc = (code: number, details: string) => Object.assign(new Error(`${code} X: ${details}`), { code, details });
  t.equal(reasonOf(pubsubFailure(grpc(16, 'Request had invalid authentication credentials.'), live)), 'unauthorized');
  t.equal(reasonOf(pubsubFailure(grpc(7, 'User not authorized'), live)), 'unauthorized');
  t.equal(reasonOf(pubsubFailure(grpc(3, 'An attribute key must not start with "goog"'), live)), 'rejected');
  t.equal(reasonOf(pubsubFailure(grpc(8, 'Quota exceeded'), live)), 'throttled');
  t.equal(reasonOf(pubsubFailure(grpc(13, 'internal'), live)), 'peer_error');
  t.equal(reasonOf(pubsubFailure(grpc(14, 'Name resolution failed: getaddrinfo ENOTFOUND nowhere.invalid'), live)), 'dns_error');
  const notRetried = Object.assign(
    new Error('Exceeded maximum number of retries retrying error Error: 16 UNAUTHENTICATED: bad token before any response was received'),
    { code: 4 },
  );
  const out = pubsubFailure(notRetried, live);
  t.match(
    out,
    { status: 'failed', code: 'ERR', response_data: { reason: 'unauthorized', message: 'bad token', grpc_code: 16 } },
    'the inner status of a call not retried',
  );
  const aborted = new AbortController();
  aborted.abort();
  t.equal(reasonOf(pubsubFailure(grpc(1, 'cancelled'), aborted.signal)), 'timeout', 'the deadline passed');
  // The token could not be had: grpc-js's UNKNOWN around google-auth-library's error (a GaxiosError has no numeric code).
  const plugin = (why: string) => grpc(2, `Getting metadata from plugin failed with error: ${why}`);
  t.equal(reasonOf(pubsubFailure(plugin('invalid_grant: Invalid JWT Signature.'), live)), 'unauthorized', 'a key deleted or disabled');
  t.equal(reasonOf(pubsubFailure(plugin('invalid_client: The OAuth client was not found.'), live)), 'unauthorized');
  t.equal(
    reasonOf(
      pubsubFailure(
        plugin('request to https://oauth2.googleapis.com/token failed, reason: getaddrinfo ENOTFOUND oauth2.googleapis.com'),
        live,
      ),
    ),
    'dns_error',
    'the token endpoint not reached',
  );
  t.equal(reasonOf(pubsubFailure(grpc(2, 'something else'), live)), 'peer_error');
});

t.test('pubsub: endpoint forms', async (t) => {
  t.same(parseEndpoint(undefined), { apiEndpoint: 'pubsub.googleapis.com', plaintext: false, host: 'pubsub.googleapis.com' });
  t.same(parseEndpoint('localhost:8085'), { apiEndpoint: 'localhost:8085', plaintext: true, host: 'localhost' });
  t.same(parseEndpoint('http://10.0.0.5:8085/'), { apiEndpoint: 'http://10.0.0.5:8085/', plaintext: true, host: '10.0.0.5' });
  t.same(parseEndpoint('https://pubsub.example.com'), {
    apiEndpoint: 'https://pubsub.example.com',
    plaintext: false,
    host: 'pubsub.example.com',
  });
  t.same(parseEndpoint('[::1]:8085').host, '[::1]');
});

t.test('servicebus: SDK codes and socket errors', async (t) => {
  t.equal(reasonOf(serviceBusFailure(new ServiceBusError('quota', 'QuotaExceeded'), live)), 'throttled');
  const size = serviceBusFailure(new ServiceBusError('too big', 'MessageSizeExceeded'), live);
  t.match(size, { retryable: true, response_data: { reason: 'rejected', servicebus_code: 'MessageSizeExceeded' } });
  const busy = serviceBusFailure(new ServiceBusError('busy', 'ServiceBusy'), live);
  t.equal(busy.retryAfterMs, 10_000, 'ServerBusy: Service Bus asks for 10 s');
  t.equal(reasonOf(serviceBusFailure(new ServiceBusError('disabled', 'MessagingEntityDisabled'), live)), 'not_found');
  t.equal(
    reasonOf(serviceBusFailure(new ServiceBusError('ENOTFOUND: getaddrinfo ENOTFOUND ns.invalid', 'ServiceCommunicationProblem'), live)),
    'dns_error',
  );
  t.equal(reasonOf(serviceBusFailure(Object.assign(new Error('connect ECONNRESET'), { code: 'ECONNRESET' }), live)), 'connection_reset');
  t.equal(reasonOf(serviceBusFailure(Object.assign(new Error('The operation was aborted.'), { name: 'AbortError' }), live)), 'timeout');
  t.equal(endpointHost('Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v'), 'ns.servicebus.windows.net');
  t.equal(endpointHost('SharedAccessKeyName=k;Endpoint=sb://127.0.0.1:5672;SharedAccessKey=v'), '127.0.0.1');
  t.equal(endpointHost('Endpoint=https://x/'), null);
  t.equal(
    withoutEntityPath('Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=orders'),
    'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v',
    'an entity-scoped policy: the name field decides the entity',
  );
});

t.test('kafka: kafkajs errors, wrapped or not', async (t) => {
  const protocol = (type: string) => ({ name: 'KafkaJSProtocolError', type, message: `${type} message` });
  const retries = (cause: unknown) => ({ name: 'KafkaJSNumberOfRetriesExceeded', message: 'retries', cause });
  t.equal(reasonOf(kafkaFailure(retries(protocol('TOPIC_AUTHORIZATION_FAILED')), live)), 'unauthorized');
  t.equal(reasonOf(kafkaFailure(protocol('MESSAGE_TOO_LARGE'), live)), 'rejected');
  t.equal(reasonOf(kafkaFailure(protocol('UNSUPPORTED_SASL_MECHANISM'), live)), 'invalid_config');
  t.equal(kafkaFailure(protocol('UNSUPPORTED_SASL_MECHANISM'), live).retryable, false, 'a mechanism the cluster lacks is not retried');
  t.equal(reasonOf(kafkaFailure(protocol('NOT_LEADER_OR_FOLLOWER'), live)), 'peer_error');
  t.equal(
    reasonOf(
      kafkaFailure(
        { name: 'KafkaJSConnectionError', message: 'Connection error: getaddrinfo ENOTFOUND b.invalid', code: 'ENOTFOUND' },
        live,
      ),
    ),
    'dns_error',
  );
  t.equal(reasonOf(kafkaFailure({ name: 'KafkaJSConnectionError', message: 'Connection timeout' }, live)), 'timeout');
  t.equal(
    reasonOf(kafkaFailure({ name: 'KafkaJSRequestTimeoutError', message: 'Request Produce(key: 0, version: 7) timed out' }, live)),
    'timeout',
  );
});

t.test('kafka: the record key', async (t) => {
  const input = { id: 'evt_1', data: { customer: { id: 42 }, tags: ['a'] }, metadata: { 'event-id': 'evt_1', region: 'eu' } };
  t.equal(keyOf(null, input), 'evt_1', 'default: the event id');
  t.equal(keyOf(compile('metadata.region'), input), 'eu');
  t.equal(keyOf(compile('data.customer.id'), input), '42', 'a number as its JSON text');
  t.equal(keyOf(compile('data.tags'), input), '["a"]');
  t.equal(keyOf(compile('data.nothing'), input), null, 'no value: the event is refused');
});
