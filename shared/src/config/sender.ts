import { DESTINATION_TYPES } from '../model/index.ts';
import type { Setting } from './setting.ts';

/**
 * Settings of the sender (services/sender): which destination types it delivers, its limits, the
 * retry schedule, the egress policy, and what each type's delivery looks like.
 */
export const SENDER_SETTINGS = {
  SENDER_TYPES: {
    kind: 'list',
    default: 'webhook,sqs,rabbitmq,gateway,kinesis,servicebus,s3,pubsub,kafka',
    enum: DESTINATION_TYPES,
    description:
      'Destination types this sender process consumes (comma separated); the default is every type. Split them over sender processes to scale or isolate types; a type no sender consumes waits in its deliveries topic.',
  },
  DELIVERY_TIMEOUT_SECONDS: {
    kind: 'integer',
    default: '5',
    minimum: 1,
    maximum: 300,
    description: 'Upper bound of one delivery attempt.',
  },
  RETRY_SCHEDULE: {
    kind: 'integer-list',
    default: '',
    description:
      'Comma-separated delays in seconds between retries (the n-th entry before the n-th retry); replaces RETRY_INTERVAL_SECONDS. Retries: as many as it has entries, at most RETRY_MAX_LIMIT.',
  },
  RETRY_INTERVAL_SECONDS: {
    kind: 'integer',
    default: '30',
    minimum: 1,
    description: 'First retry delay; doubles each retry when RETRY_SCHEDULE is empty.',
  },
  RETRY_MAX_LIMIT: {
    kind: 'integer',
    default: '10',
    minimum: 0,
    description: 'Most retries after the first attempt, with or without RETRY_SCHEDULE (0: none).',
  },
  RETRY_AFTER_MAX_SECONDS: {
    kind: 'integer',
    default: '3600',
    minimum: 0,
    description: 'Longest wait a destination may ask for with Retry-After.',
  },
  SENDER_CONCURRENCY: {
    kind: 'integer',
    default: '64',
    minimum: 1,
    maximum: 10000,
    description:
      'Deliveries in flight at once per partition in a sender (kinesis partitions four times this, at most 500, so its batches fill). Keep it well above the number of destinations of one partition that may hang at once: each holds a slot until its timeout.',
  },
  SENDER_MAX_INFLIGHT_BYTES: {
    kind: 'integer',
    default: '16777216',
    minimum: 1024,
    description:
      'Bytes of delivery records (as stored in the delivery topic) a sender has in flight at once, across its partitions; one delivery always fits. Bounds the memory a sender holds whatever the size of events (16 MiB: 64 deliveries of 256 KiB events).',
  },
  DESTINATION_CONCURRENCY: {
    kind: 'integer',
    default: '8',
    minimum: 1,
    maximum: 1000,
    description:
      'Deliveries in flight at once to one destination (per sender partition), so a slow destination cannot take every slot. A delivery holds its slot until the destination answers (or the timeout), not while its attempt is written. For the batched types (sqs, kinesis) it counts requests: up to this many full batches of deliveries, within SENDER_CONCURRENCY less this many.',
  },
  DESTINATION_STALL_MS: {
    kind: 'integer',
    default: '1000',
    minimum: 1,
    maximum: 3600000,
    description:
      'A destination is stalled while its oldest delivery in flight has run this long (counted from its request: waiting for a rate-limit turn or a scheduled time does not count), or after a delivery ran into the delivery timeout (it then gets one slot until a delivery finishes in time). Deliveries of a stalled destination that would wait for a slot are parked instead, so it cannot fill the partition; a destination that keeps up is never parked.',
  },
  DESTINATION_BACKLOG: {
    kind: 'integer',
    default: '0',
    minimum: 0,
    maximum: 100000,
    description: 'Deliveries of a stalled destination allowed to wait for a slot per sender partition before the rest are parked.',
  },
  EGRESS_ALLOW: {
    kind: 'list',
    default: '',
    description: 'CIDRs or hosts deliveries may reach although not public (loopback, private ranges); empty allows public addresses only.',
  },
  WEBHOOK_SIGNATURE_MODE: {
    kind: 'string',
    default: 'standard',
    enum: ['standard', 'compatible'],
    description: 'standard: Standard Webhooks v1 (webhook-signature); compatible: x-outpost-signature v0=<hex>.',
  },
  WEBHOOK_RESPONSE_MAX_BYTES: {
    kind: 'integer',
    default: '8192',
    minimum: 0,
    description: 'Bytes of a destination response body kept in an attempt.',
  },
  EVENT_GATEWAY_BASE_URL: {
    kind: 'string',
    default: 'https://hkdk.events',
    format: 'http-url',
    description:
      'Base URL of the event gateway that gateway destinations deliver to: each event is POSTed to <base>/<source id>. Point it at a self-hosted gateway or a local receiver.',
  },
  KINESIS_METADATA_IN_PAYLOAD: {
    kind: 'boolean',
    default: 'true',
    description:
      'Kinesis records are {"metadata": {...}, "data": <event data>} (true) or the event data alone (false: Kinesis records have no attributes, so the metadata is not sent).',
  },
} as const satisfies Record<string, Setting>;
