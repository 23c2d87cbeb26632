/**
 * The sender module of each destination type this build delivers: a new type is one entry here (its
 * module under src/<type>/), one declaration in shared/src/destinations/registry.ts and one fixture of
 * the conformance suite (test/conformance/). SENDER_TYPES may name only the types listed here.
 */
import type { Config } from '@switchyard/shared/config/index.ts';
import type { DestinationType } from '@switchyard/shared/model/index.ts';
import type { Dispatcher } from 'undici';
import type { AllowList } from './egress.ts';
import type { TypeSender } from './sender.ts';
import { createGatewaySender } from './gateway/sender.ts';
import { createKafkaSender } from './kafka/sender.ts';
import { createKinesisSender } from './kinesis/sender.ts';
import { createPubSubSender } from './pubsub/sender.ts';
import { createRabbitSender } from './rabbitmq/sender.ts';
import { createS3Sender } from './s3/sender.ts';
import { createServiceBusSender } from './servicebus/sender.ts';
import { createSqsSender } from './sqs/sender.ts';
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
  sqs: ({ allow }) => createSqsSender({ allow }),
  rabbitmq: ({ config, allow }) => createRabbitSender({ allow, connectTimeoutMs: config.DELIVERY_TIMEOUT_SECONDS * 1000 }),
  gateway: ({ config, dispatcher }) =>
    createGatewaySender({
      dispatcher,
      baseUrl: config.EVENT_GATEWAY_BASE_URL,
      headerPrefix: config.WEBHOOK_HEADER_PREFIX,
      responseMaxBytes: config.WEBHOOK_RESPONSE_MAX_BYTES,
    }),
  kinesis: ({ config, allow }) => createKinesisSender({ allow, metadataInPayload: config.KINESIS_METADATA_IN_PAYLOAD }),
  servicebus: ({ allow, config }) =>
    createServiceBusSender({ allow, operationTimeoutMs: Math.max(1000, config.DELIVERY_TIMEOUT_SECONDS * 1000) }),
  s3: ({ allow }) => createS3Sender({ allow }),
  pubsub: ({ allow, config }) => createPubSubSender({ allow, requestTimeoutMs: Math.max(1000, config.DELIVERY_TIMEOUT_SECONDS * 1000) }),
  kafka: ({ allow, config }) => createKafkaSender({ allow, connectTimeoutMs: Math.min(10_000, config.DELIVERY_TIMEOUT_SECONDS * 1000) }),
};

/** The types this build can deliver, in the registry's order. */
export const implementedTypes = (): DestinationType[] => Object.keys(SENDERS) as DestinationType[];
