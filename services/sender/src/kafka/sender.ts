/**
 * kafka delivery (../shared/spec/contract-details.md, "How each type delivers", the extra type): one
 * record produced to `topic` on the tenant's `brokers` with acks=all; the value is the event data as
 * JSON text, the key is `partition_key_template` (JMESPath over `{data, metadata}`) or else the event
 * id, and the headers are the metadata map plus `content-type: application/json`.
 *
 * Each destination has a kafkajs producer of its own, never the service's internal Kafka client:
 * SASL (plain, scram-sha-256, scram-sha-512) with the destination's user, TLS unless `tls` is false,
 * and every socket (the bootstrap brokers and those the cluster advertises) opened through EGRESS_ALLOW.
 * kafkajs does not retry here: a failed produce is the attempt's failure, retried by the schedule.
 */
import net from 'node:net';
import tls from 'node:tls';
import { compile, TreeInterpreter } from '@jmespath-community/jmespath';
import { Kafka, type Producer, logLevel } from 'kafkajs';
// kafkajs's idle connections poll every millisecond without this fix; the internal bus applies it
// too, but embedded mode never loads that, and this module is loaded on the first kafka delivery.
import '@switchyard/shared/kafka/kafkajs/idle-poll.ts';
import { untilAborted } from '../abortable.ts';
import { type AllowList, createEgressLookup, literalBlocked } from '../egress.ts';
import { classifyNetworkError, errorChain } from '../network-errors.ts';
import { bodyOf, metadataOf } from '../metadata.ts';
import { type FailureReason, failed, type Outcome, succeeded, type TypeSender } from '../sender.ts';

type Mechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';
const MECHANISMS: readonly string[] = ['plain', 'scram-sha-256', 'scram-sha-512'];

export interface KafkaSenderOptions {
  allow: AllowList;
  /** Connecting to one broker (TCP, TLS and SASL), in milliseconds. */
  connectTimeoutMs?: number;
  /** A produce request (the broker waits for acks=all within it). */
  requestTimeoutMs?: number;
}

/** Kafka protocol errors (kafkajs `type`) by reason; the rest are peer_error. */
const PROTOCOL_REASONS: Record<string, FailureReason> = {
  SASL_AUTHENTICATION_FAILED: 'unauthorized',
  TOPIC_AUTHORIZATION_FAILED: 'unauthorized',
  CLUSTER_AUTHORIZATION_FAILED: 'unauthorized',
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 'unauthorized',
  UNSUPPORTED_SASL_MECHANISM: 'invalid_config',
  ILLEGAL_SASL_STATE: 'invalid_config',
  UNKNOWN_TOPIC_OR_PARTITION: 'not_found',
  INVALID_TOPIC_EXCEPTION: 'invalid_config',
  MESSAGE_TOO_LARGE: 'rejected',
  RECORD_LIST_TOO_LARGE: 'rejected',
  INVALID_RECORD: 'rejected',
  CORRUPT_MESSAGE: 'rejected',
  POLICY_VIOLATION: 'rejected',
  THROTTLING_QUOTA_EXCEEDED: 'throttled',
  REQUEST_TIMED_OUT: 'timeout',
};

export function kafkaFailure(err: unknown, signal: AbortSignal): Outcome {
  if (signal.aborted) return failed('timeout', 'no answer from the brokers within the delivery timeout');
  // kafkajs's fields as text (where they are text), beside the error itself.
  const chain = errorChain(err).map((raw) => ({
    raw,
    code: raw.code,
    name: text(raw.name),
    type: text(raw.type),
    message: text(raw.message),
  }));
  const line = (e: { message?: string } | undefined) => (e?.message ?? String(err)).split('\n')[0] ?? '';
  for (const e of chain) {
    if (e.name === 'KafkaJSSASLAuthenticationError') return failed('unauthorized', line(e));
    if (e.type && PROTOCOL_REASONS[e.type]) return failed(PROTOCOL_REASONS[e.type] as FailureReason, line(e), { kafka_error: e.type });
    if (/egress blocked/.test(e.message ?? '')) return failed('egress_blocked', line(e));
  }
  for (const e of chain) {
    if (e.name === 'KafkaJSConnectionError' || e.name === 'KafkaJSConnectionClosedError' || e.code) {
      const { reason, message } = classifyNetworkError(e.raw);
      if (reason !== 'network_error') return failed(reason, message);
      if (/timeout/i.test(e.message ?? '')) return failed('timeout', line(e));
      return failed(reason, message);
    }
    if (e.name === 'KafkaJSRequestTimeoutError') return failed('timeout', line(e));
  }
  const typed = chain.find((e) => e.type);
  return failed('peer_error', line(typed ?? chain[0]), typed?.type ? { kafka_error: typed.type } : {});
}

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The record key: the template's value for `{data, metadata}` (text as is, else JSON), or the event id. */
export function keyOf(
  template: ReturnType<typeof compile> | null,
  input: { id: string; data: unknown; metadata: Record<string, string> },
): string | null {
  if (!template) return input.id;
  const v = TreeInterpreter.search(template, { data: input.data, metadata: input.metadata } as never);
  if (v === null || v === undefined) return null;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

const truthy = (v: unknown, dflt: boolean) => (v === undefined || v === null || v === '' ? dflt : v === true || v === 'true');

export function createKafkaSender(opts: KafkaSenderOptions): TypeSender {
  const lookup = createEgressLookup(opts.allow);
  // Every connection kafkajs opens, to the bootstrap brokers and to those the cluster advertises.
  const socketFactory = ({
    host,
    port,
    ssl,
    onConnect,
  }: {
    host: string;
    port: number;
    ssl: tls.ConnectionOptions | boolean;
    onConnect: () => void;
  }) => {
    const blocked = literalBlocked(host, opts.allow);
    if (blocked) {
      const s = new net.Socket();
      process.nextTick(() => s.destroy(blocked));
      return s;
    }
    const socket = ssl
      ? tls.connect(
          { host, port, servername: net.isIP(host) ? undefined : host, lookup, ...(typeof ssl === 'object' ? ssl : {}) },
          onConnect,
        )
      : net.connect({ host, port, lookup }, onConnect);
    socket.setKeepAlive(true, 60_000);
    return socket;
  };

  return {
    open(target) {
      const { config, credentials } = target;
      const topic = String(config.topic ?? '');
      const mechanism = String(config.sasl_mechanism ?? '');
      let template: ReturnType<typeof compile> | null = null;
      let broken: Outcome | null = null;
      try {
        const t = config.partition_key_template;
        if (typeof t === 'string' && t.trim() !== '') template = compile(t);
      } catch (err) {
        broken = failed('invalid_config', `partition_key_template: ${(err as Error).message}`);
      }
      if (!MECHANISMS.includes(mechanism)) broken ??= failed('invalid_config', `unknown sasl_mechanism "${mechanism}"`);
      const brokers = String(config.brokers ?? '')
        .split(',')
        .map((b) => b.trim())
        .filter(Boolean);
      if (brokers.length === 0) broken ??= failed('invalid_config', 'no brokers');

      const newProducer = (): Producer =>
        new Kafka({
          clientId: 'switchyard',
          brokers,
          ssl: truthy(config.tls, true),
          sasl: {
            mechanism: mechanism as Mechanism,
            username: String(credentials.username ?? ''),
            password: String(credentials.password ?? ''),
          } as never,
          connectionTimeout: opts.connectTimeoutMs ?? 10_000,
          requestTimeout: opts.requestTimeoutMs ?? 30_000,
          authenticationTimeout: opts.connectTimeoutMs ?? 10_000,
          retry: { retries: 0 },
          logLevel: logLevel.NOTHING,
          socketFactory: socketFactory as never,
        }).producer({ allowAutoTopicCreation: false, idempotent: false, retry: { retries: 0 } });
      let producer = newProducer();
      // Connected on the first delivery; a failed connect is that delivery's outcome and the next
      // tries again, with a producer of its own: kafkajs would authenticate again on the connection
      // whose authentication failed (or on its ended socket once disconnected), which the broker
      // closes a moment later (connection.failed.authentication.delay.ms), and a wrong password
      // would read as a network error ("Closed connection", "write after end").
      let connecting: Promise<void> | null = null;
      const connect = () => {
        connecting ??= producer.connect().catch((err: unknown) => {
          producer.disconnect().catch(() => {});
          producer = newProducer();
          connecting = null;
          throw err;
        });
        return connecting;
      };

      return {
        async deliver({ event, deliveryMetadata, signal }) {
          if (broken) return broken;
          const metadata = metadataOf(event, deliveryMetadata);
          let key: string | null;
          try {
            key = keyOf(template, { id: event.id, data: event.data, metadata });
          } catch (err) {
            // A function given the wrong type by this event's data: this event's refusal, as in kinesis and s3.
            return failed('rejected', `partition_key_template failed for this event: ${(err as Error).message}`);
          }
          if (key === null) return failed('rejected', 'partition_key_template gives no value for this event');
          const work = (async () => {
            await connect();
            const [meta] = await producer.send({
              topic,
              acks: -1,
              timeout: opts.requestTimeoutMs ?? 30_000,
              messages: [{ key, value: bodyOf(event), headers: { ...metadata, 'content-type': 'application/json' } }],
            });
            return meta;
          })();
          try {
            const meta = await untilAborted(work, signal);
            return succeeded({ partition: meta?.partition ?? null, offset: meta?.baseOffset ?? null });
          } catch (err) {
            return kafkaFailure(err, signal);
          }
        },
        async close() {
          await producer.disconnect().catch(() => {});
        },
      };
    },
    async close() {},
  };
}
