/**
 * The Kafka topic catalogue. Every topic the services read or write is declared here with its key,
 * its record schema (docs/schemas/) and who writes and reads it. No topic name is spelled elsewhere:
 * code asks for `topicName(config, TOPIC.events)` and tests get unique names through the prefix.
 */
export interface TopicDef {
  /** Name without the deployment prefix. */
  readonly name: string;
  /** What the record key holds; it decides partitioning and therefore ordering. */
  readonly key: string;
  readonly description: string;
  /** JSON Schema file under docs/schemas/ describing the record value. */
  readonly schema?: string;
  /** Compacted topics keep the latest record per key. */
  readonly compacted?: boolean;
}

export const DESTINATION_TYPES = ['webhook', 'sqs', 'rabbitmq', 'gateway', 'kinesis', 'servicebus', 's3', 'pubsub'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

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
} as const satisfies { events: TopicDef; attempts: TopicDef; deliveries: Record<DestinationType, TopicDef> };

/** Every topic the service creates at start-up. */
export function allTopics(): TopicDef[] {
  return [TOPIC.events, TOPIC.attempts, ...Object.values(TOPIC.deliveries)];
}

export function topicName(prefix: string, topic: TopicDef): string {
  return `${prefix}${topic.name}`;
}
