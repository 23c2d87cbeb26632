/**
 * The sender module of each destination type this build delivers: a new type is one entry here (its
 * module under src/<type>/), one declaration in shared/src/destinations/registry.ts and one fixture of
 * the conformance suite (test/conformance/). SENDER_TYPES may name only the types listed here.
 *
 * The HTTP types (and s3's PUTs) share undici, which every process loads anyway; the others are loaded on their first
 * delivery (`lazily`): the cloud SDKs cost tens of MB of memory each, paid only where the type is used.
 */
import type { Config } from '@switchyard/shared/config/index.ts';
import type { DestinationType } from '@switchyard/shared/model/index.ts';
import type { Dispatcher } from 'undici';
import type { AllowList } from './egress.ts';
import { createGatewaySender } from './gateway/sender.ts';
import type { Client, TypeSender } from './sender.ts';
import { createWebhookSender } from './webhook/sender.ts';

/** What a type's sender may use: the configuration and the egress policy every connection obeys. */
export interface SenderContext {
  config: Config;
  /** EGRESS_ALLOW, parsed: clients check every address they connect to against it (egress.ts). */
  allow: AllowList;
  /** The egress-checked HTTP agent shared by the HTTP types (closed by the service, not by a sender). */
  dispatcher: Dispatcher;
}

export const SENDERS: Partial<Record<DestinationType, (ctx: SenderContext) => TypeSender>> = {
  webhook: ({ config, dispatcher }) =>
    createWebhookSender({
      dispatcher,
      mode: config.WEBHOOK_SIGNATURE_MODE as 'standard' | 'compatible',
      headerPrefix: config.WEBHOOK_HEADER_PREFIX,
      responseMaxBytes: config.WEBHOOK_RESPONSE_MAX_BYTES,
    }),
  sqs: ({ allow }) => lazily(async () => (await import('./sqs/sender.ts')).createSqsSender({ allow })),
  rabbitmq: ({ config, allow }) =>
    lazily(async () =>
      (await import('./rabbitmq/sender.ts')).createRabbitSender({ allow, connectTimeoutMs: config.DELIVERY_TIMEOUT_SECONDS * 1000 }),
    ),
  gateway: ({ config, dispatcher }) =>
    createGatewaySender({
      dispatcher,
      baseUrl: config.EVENT_GATEWAY_BASE_URL,
      headerPrefix: config.WEBHOOK_HEADER_PREFIX,
      responseMaxBytes: config.WEBHOOK_RESPONSE_MAX_BYTES,
    }),
  kinesis: ({ config, allow }) =>
    lazily(async () =>
      (await import('./kinesis/sender.ts')).createKinesisSender({ allow, metadataInPayload: config.KINESIS_METADATA_IN_PAYLOAD }),
    ),
  servicebus: ({ allow, config }) =>
    lazily(async () =>
      (await import('./servicebus/sender.ts')).createServiceBusSender({
        allow,
        operationTimeoutMs: Math.max(1000, config.DELIVERY_TIMEOUT_SECONDS * 1000),
      }),
    ),
  s3: ({ allow, dispatcher }) => lazily(async () => (await import('./s3/sender.ts')).createS3Sender({ allow, dispatcher })),
  pubsub: ({ allow, config }) =>
    lazily(async () =>
      (await import('./pubsub/sender.ts')).createPubSubSender({
        allow,
        requestTimeoutMs: Math.max(1000, config.DELIVERY_TIMEOUT_SECONDS * 1000),
      }),
    ),
  kafka: ({ allow, config }) =>
    lazily(async () =>
      (await import('./kafka/sender.ts')).createKafkaSender({
        allow,
        connectTimeoutMs: Math.min(10_000, config.DELIVERY_TIMEOUT_SECONDS * 1000),
      }),
    ),
};

/**
 * Deliveries one request of a batched type carries at most (sqs/sender.ts, kinesis/sender.ts; kept
 * here so that the SDKs load lazily). Their destinations get more deliveries in flight than others
 * (`keyConcurrencyOf`): a batch can only hold the deliveries the consumer lets in at once.
 */
export const BATCHED: Partial<Record<DestinationType, number>> = { sqs: 10, kinesis: 500 };

/**
 * Deliveries in flight at once to one destination of `type` (per sender partition). For a batched
 * type DESTINATION_CONCURRENCY counts requests: up to that many full batches, but never more than
 * the partition's concurrency (`partitionConcurrencyOf`) less one destination's share, so the other
 * destinations of the partition keep at least DESTINATION_CONCURRENCY slots while one hangs.
 */
/**
 * Deliveries in flight at once per partition of `type`'s delivery topic: SENDER_CONCURRENCY, except
 * for a batched type whose request holds more than that (kinesis: 500 records), whose partitions get
 * up to four times as many, never beyond one request's worth. A batch can only fill with what is in
 * flight: at 64 a kinesis destination's PutRecords carried 17-24 records (about 50 requests per
 * 1,000 deliveries), at 256 about 60 (15-17). SENDER_MAX_INFLIGHT_BYTES still bounds the memory.
 */
export function partitionConcurrencyOf(type: DestinationType, senderConcurrency: number): number {
  const perRequest = BATCHED[type];
  if (!perRequest || perRequest <= senderConcurrency) return senderConcurrency;
  return Math.min(perRequest, senderConcurrency * 4);
}

export function keyConcurrencyOf(type: DestinationType, senderConcurrency: number, destinationConcurrency: number): number {
  const perRequest = BATCHED[type];
  if (!perRequest) return destinationConcurrency;
  return Math.max(destinationConcurrency, Math.min(destinationConcurrency * perRequest, senderConcurrency - destinationConcurrency));
}

/** The types this build can deliver, in the registry's order. */
export const implementedTypes = (): DestinationType[] => Object.keys(SENDERS) as DestinationType[];

/**
 * A type sender whose module is loaded on the first delivery of the type. `open` stays synchronous
 * (the contract: a client connects on its first delivery), so the client loads and opens the real one
 * then. A module that fails to load throws from `deliver`: our fault, recorded as the handler records
 * any sender that throws, and tried again on the next delivery.
 */
export function lazily(load: () => Promise<TypeSender>): TypeSender {
  let loaded: Promise<TypeSender> | undefined;
  const sender = () => {
    loaded ??= load().catch((err: unknown) => {
      loaded = undefined;
      throw err;
    });
    return loaded;
  };
  return {
    open(target) {
      let client: Promise<Client> | undefined;
      return {
        async deliver(delivery) {
          client ??= sender()
            .then((s) => s.open(target))
            .catch((err: unknown) => {
              client = undefined;
              throw err;
            });
          return (await client).deliver(delivery);
        },
        async close() {
          await (await client?.catch(() => undefined))?.close();
        },
      };
    },
    async close() {
      await (await loaded?.catch(() => undefined))?.close();
    },
  };
}
