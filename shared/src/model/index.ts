/** interface.md's eight types in its order, then kafka (contract-details.md's extra type). */
export const DESTINATION_TYPES = ['webhook', 'sqs', 'rabbitmq', 'gateway', 'kinesis', 'servicebus', 's3', 'pubsub', 'kafka'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface Tenant {
  id: string;
  destinations_count: number;
  topics: string[];
  metadata?: Record<string, string>;
  created_at: string;
  updated_at: string;
}

/** A destination as the stores and the pipeline see it: secrets decrypted, never logged. */
export interface Destination {
  id: string;
  tenant_id: string;
  type: DestinationType;
  topics: string[];
  config: Record<string, unknown>;
  credentials: Record<string, unknown>;
  delivery_metadata: Record<string, string> | null;
  metadata: Record<string, string> | null;
  filter: JsonObject | null;
  disabled_at: string | null;
  /** The most deliveries a second and/or a minute the senders make to it; null: no limit. */
  rate_limit?: RateLimit | null;
  /** True: deliveries are made one at a time, in the order of the events topic (absent: false). */
  ordered?: boolean;
  created_at: string;
  updated_at: string;
}

/**
 * One destination, as a process keeps state of it in memory (a sender's dispatch, its clients): an
 * id is unique only within its tenant, and tenants choose ids. Ids hold no NUL (ID_PATTERN).
 */
export const destinationKey = (tenantId: string, id: string): string => `${tenantId}\u0000${id}`;

/** A destination's rate limit (at least one of the two): deliveries started per second, per minute. */
export interface RateLimit {
  per_second?: number;
  per_minute?: number;
}

/** A published event, as written to the events topic (shared/schemas/event.schema.json). */
export interface EventRecord {
  id: string;
  tenant_id: string;
  topic: string;
  time: string;
  eligible_for_retry: boolean;
  metadata: Record<string, unknown> | null;
  data: JsonObject;
  destination_id?: string | null;
  /** Server time the event entered the events topic (the Kafka record timestamp); set by the router. */
  received_at?: string;
  /** A scheduled event: when its deliveries are due (ISO time); absent: at once. */
  deliver_at?: string;
}

/**
 * One delivery of one event to one destination (shared/schemas/delivery.schema.json).
 * The destination travels as a snapshot with its secrets still encrypted, so a sender needs no
 * database round trip and nothing readable sits in Kafka.
 */
export interface DeliveryRecord {
  event: EventRecord;
  destination: DestinationSnapshot;
  attempt_number: number;
  manual: boolean;
  /** On retry topics: when the retry is due (ISO time). */
  due_at?: string;
  /** Times in a row this delivery was parked, without an attempt, because its destination was stalled. */
  parked?: number;
  /**
   * Where the router read its event in the events topic. The same for every delivery the event
   * gets, also when a router that crashed routes it again: an ordered destination's sender skips
   * such a repeat by it (controls/ordered.ts). Absent on deliveries routed before it was added.
   */
  event_position?: { partition: number; offset: string };
  /** Parked for its destination's rate limit: the turn it was given (ISO time), kept when it comes back. */
  turn_at?: string;
}

/** Where the router sent one event (shared/schemas/routed.schema.json). */
export interface RoutedRecord {
  event: EventRecord;
  matched_destination_ids: string[];
  skipped_destination_ids: string[];
}

export type OperatorEventType = 'alert.consecutive_failure' | 'destination.auto_disabled';

/** A notification for operators (shared/schemas/operator-event.schema.json). */
export interface OperatorEvent {
  id: string;
  type: OperatorEventType;
  time: string;
  tenant_id: string;
  destination_id: string;
  data: { consecutive_failures: number; threshold: number; last_attempt?: AttemptRecord };
}

/** What changed, on the destination-changes topic (shared/schemas/destination-change.schema.json). */
export type DestinationChangeKind = 'created' | 'updated' | 'deleted' | 'enabled' | 'disabled' | 'tenant_deleted';

/**
 * One change of a destination, written after it is stored. `destination_id` null: every destination
 * of the tenant (the tenant was deleted).
 */
export interface DestinationChange {
  tenant_id: string;
  destination_id: string | null;
  change: DestinationChangeKind;
  time: string;
}

/** What routing needs of a destination: no configuration, no secrets. */
export type DestinationRoute = Pick<Destination, 'id' | 'topics' | 'filter' | 'disabled_at'>;

export interface DestinationSnapshot {
  id: string;
  tenant_id: string;
  type: DestinationType;
  config: Record<string, unknown>;
  /** Ciphertext (see crypto.ts) of the credentials JSON. */
  credentials: string | null;
  /** Ciphertext of the delivery_metadata JSON. */
  delivery_metadata: string | null;
  /**
   * The destination's cancel epoch when the delivery was made (absent: 0). Canceling what is
   * pending raises it; a sender cancels deliveries that carry a lower one.
   */
  cancel_epoch?: number;
  /** The destination's rate limit (absent: none). */
  rate_limit?: RateLimit;
  /** True when the destination was ordered as the delivery was routed (absent: false). */
  ordered?: boolean;
  /**
   * When the destination was created (ISO time; absent on deliveries made before it was written). A
   * destination deleted and created again under its id has another: the old one's deliveries are
   * canceled, never sent to the new one.
   */
  created_at?: string;
}

/** `canceled`: no delivery was made because the destination was deleted or disabled meanwhile. */
export type AttemptStatus = 'success' | 'failed' | 'canceled';

/** One delivery attempt (shared/schemas/attempt.schema.json); the attempts topic carries these. */
export interface AttemptRecord {
  id: string;
  tenant_id: string;
  destination_id: string;
  destination_type: DestinationType;
  event_id: string;
  topic: string;
  /** The event's own time and the time it was received (which places its rows in storage). */
  event_time: string;
  event_received_at: string;
  status: AttemptStatus;
  /** 'OK', 'ERR' or the destination's HTTP status code. */
  code: string;
  response_data: Record<string, unknown> | null;
  attempt_number: number;
  manual: boolean;
  time: string;
  duration_ms: number;
  /** No automatic retry follows (success, not retryable, or retries exhausted). */
  final: boolean;
  /** When the automatic retry is due, if one follows. */
  next_attempt_at?: string | null;
}
