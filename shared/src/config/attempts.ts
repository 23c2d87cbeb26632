import type { Setting } from './setting.ts';

/**
 * Settings of the attempts service (services/attempts): how it batches its writes, alerts on
 * failing destinations, and keeps (and drops) time partitions.
 */
export const ATTEMPTS_SETTINGS = {
  ATTEMPTS_BATCH_WAIT_MS: {
    kind: 'integer',
    default: '200',
    minimum: 0,
    maximum: 5000,
    description:
      'Longest the attempts service lets a batch of attempts or routed events fill before writing it (its fetch wait): fewer, larger writes at low load; listings trail deliveries by at most this much more. 0: write what each fetch brings.',
  },
  ATTEMPTS_FETCH_MAX_BYTES: {
    kind: 'integer',
    default: '2097152',
    minimum: 65536,
    maximum: 104857600,
    description:
      'Bytes one fetch of the attempts service may bring back, all of it from one partition if only one has records (kafkajs would take 10 MiB a fetch, 1 MiB a partition). Behind, each of its two consumers holds about one fetch of records at once: in the benchmark 2 MiB kept it at 139-152 MB catching up at 13,000-14,000 attempts/s, 10 MiB caught up a fifth faster at 235 MB.',
  },
  ALERT_CONSECUTIVE_FAILURE_COUNT: {
    kind: 'integer',
    default: '20',
    minimum: 1,
    description: 'Consecutive failed attempts of a destination that raise an operator event.',
  },
  ALERT_AUTO_DISABLE_DESTINATION: {
    kind: 'boolean',
    default: 'false',
    description: 'Disable a destination when it reaches ALERT_CONSECUTIVE_FAILURE_COUNT.',
  },
  OPERATOR_CALLBACK_URL: {
    kind: 'string',
    default: '',
    format: 'http-url',
    description: 'Optional URL that receives operator events as signed HTTP POSTs (they always go to the operator-events topic).',
  },
  OPERATOR_CALLBACK_SECRET: {
    kind: 'string',
    default: '',
    secret: true,
    description: 'HMAC key signing operator callbacks (Standard Webhooks headers); required when OPERATOR_CALLBACK_URL is set.',
  },
  RETENTION_DAYS: {
    kind: 'integer',
    default: '30',
    minimum: 0,
    description:
      'Days events, deliveries, attempts, their counts and operator events are kept: older time partitions are dropped whole, older count rows deleted (0 keeps everything; docs/queries.md).',
  },
  PARTITION_INTERVAL_DAYS: {
    kind: 'integer',
    default: '1',
    minimum: 1,
    maximum: 31,
    description: 'Days per time partition of events, deliveries and attempts, which is also the granularity of retention.',
  },
  PARTITION_AHEAD_DAYS: { kind: 'integer', default: '7', minimum: 1, description: 'Time partitions are created this many days ahead.' },
} as const satisfies Record<string, Setting>;
