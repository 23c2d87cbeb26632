import { DESTINATION_TYPES, type DestinationType } from '../model/index.ts';

/**
 * The topic catalogue, whichever log carries it (Kafka or the embedded log). Every topic the services
 * read or write is declared here with its key, its record schema (shared/schemas/) and who writes and
 * reads it. No topic name is spelled elsewhere: code asks for `topicName(config, TOPIC.events)` and
 * tests get unique names through the prefix.
 */
export interface TopicDef {
  /** Name without the deployment prefix. */
  readonly name: string;
  /** What the record key holds; it decides partitioning and therefore ordering. */
  readonly key: string;
  readonly description: string;
  /** JSON Schema file under shared/schemas/ describing the record value. */
  readonly schema?: string;
  /** Compacted topics keep the latest record per key. */
  readonly compacted?: boolean;
}

const deliveries = Object.fromEntries(
  DESTINATION_TYPES.map((type) => [
    type,
    {
      name: `deliveries.${type}`,
      key: 'destination_id',
      description: `Delivery records for ${type} destinations: one per (event, destination), written by the router and by manual retries, read by the ${type} sender group.`,
      schema: 'delivery.schema.json',
    } satisfies TopicDef,
  ]),
) as Record<DestinationType, TopicDef>;

/**
 * Retry tiers: a failed delivery waits in the largest tier not longer than its remaining delay, then
 * moves down the tiers until due, so any RETRY_SCHEDULE works with a fixed set of topics. Each tier
 * is FIFO with one delay, so its consumer only ever waits for the head of a partition.
 */
export const RETRY_TIERS_SECONDS = [1, 5, 30, 300, 1800, 7200] as const;

const retryTiers = RETRY_TIERS_SECONDS.map(
  (seconds) =>
    ({
      name: `retry.${seconds}s`,
      key: 'destination_id',
      description: `Deliveries waiting for a retry, held about ${seconds} s; read by the retry scheduler, which sends due ones back to their delivery topic.`,
      schema: 'delivery.schema.json',
    }) satisfies TopicDef,
);

export const TOPIC = {
  events: {
    name: 'events',
    key: 'tenant_id',
    description: 'Published events, written by the gateway (or a producer directly), read by the router and the attempts service.',
    schema: 'event.schema.json',
  },
  attempts: {
    name: 'attempts',
    key: 'destination_id',
    description: 'One record per delivery attempt, written by the senders, read by the attempts service and by analysts.',
    schema: 'attempt.schema.json',
  },
  deliveries,
  retries: retryTiers,
  routed: {
    name: 'routed',
    key: 'tenant_id',
    description:
      'One record per routed event: the event and where it went (matched, skipped because disabled, or nowhere). Written by the router, read by the attempts service, which stores events from it.',
    schema: 'routed.schema.json',
  },
  deadLetter: {
    name: 'events.dead-letter',
    key: 'as received',
    description:
      'Records of the events topic that are not valid events (bad JSON, schema violations, unknown topics or tenants), as written: the original bytes of the value, the key and the headers, with the reason in the `x-dead-letter-reason` header. Written by the router.',
  },
  storeDeadLetter: {
    name: 'store.dead-letter',
    key: 'as received',
    description:
      'Records of the routed and attempts topics that the attempts service cannot store however often it tries (a data or constraint error of that record alone), with the reason in the `x-dead-letter-reason` header and the topic, partition and offset they came from in `x-dead-letter-source`. Written by the attempts service.',
  },
  operatorEvents: {
    name: 'operator-events',
    key: 'destination_id',
    description:
      'Operator notifications (for example alert.consecutive_failure, destination.auto_disabled). Written by the attempts service.',
    schema: 'operator-event.schema.json',
  },
  destinationChanges: {
    name: 'destination-changes',
    key: 'tenant_id',
    description:
      'One record per change of a destination (created, updated, deleted, enabled, disabled, auto-disabled) or deletion of a tenant. Written by the gateway and the attempts service after the change is stored; every sender instance reads all of it (broadcast) to drop what it cached of the destination.',
    schema: 'destination-change.schema.json',
  },
} as const satisfies {
  events: TopicDef;
  attempts: TopicDef;
  deliveries: Record<DestinationType, TopicDef>;
  retries: TopicDef[];
  routed: TopicDef;
  deadLetter: TopicDef;
  storeDeadLetter: TopicDef;
  operatorEvents: TopicDef;
  destinationChanges: TopicDef;
};

/**
 * The consumer groups whose lag matters (each without the deployment prefix, which the bus adds),
 * read by their services and by what watches their lag: the gateway's admission bound, key
 * rotation's check and the autoscalers in infra/k8s. The sender's destination-changes reader is a
 * broadcast (one group per instance, never lagging), so it is not here.
 */
export const GROUP = {
  router: 'router',
  sender: (type: DestinationType) => `sender-${type}`,
  retryScheduler: 'retry-scheduler',
  attempts: 'attempts',
  attemptsRouted: 'attempts-routed',
} as const;

/** Every topic the service creates at start-up. */
export function allTopics(): TopicDef[] {
  return [
    TOPIC.events,
    TOPIC.attempts,
    TOPIC.routed,
    TOPIC.deadLetter,
    TOPIC.storeDeadLetter,
    TOPIC.operatorEvents,
    TOPIC.destinationChanges,
    ...Object.values(TOPIC.deliveries),
    ...TOPIC.retries,
  ];
}

export function topicName(prefix: string, topic: TopicDef): string {
  return `${prefix}${topic.name}`;
}
