/**
 * What the query listings take and show: filters, the API views of attempts and events, and the
 * row shapes they are mapped from (the columns each query selects for them).
 */
import { keyText } from '@switchyard/shared/db/paging.ts';

export type AttemptStatus = 'success' | 'failed' | 'canceled';
export const ATTEMPT_STATUSES: readonly AttemptStatus[] = ['success', 'failed', 'canceled'];
/** The stored statuses an attempt status filter matches: `failed` is every attempt shown failed, canceled ones too. */
export const storedStatuses = (statuses: readonly string[]): string[] => [
  ...new Set(statuses.flatMap((s) => (s === 'failed' ? ['failed', 'canceled'] : [s]))),
];
/** What an event listing filters on: its deliveries' states, and `scheduled` (pending, not due yet). */
export type EventStatus = AttemptStatus | 'scheduled';
export const EVENT_STATUSES: readonly EventStatus[] = [...ATTEMPT_STATUSES, 'scheduled'];

/** Bounds on a time column; values are validated ISO 8601 strings, passed to Postgres as they are. */
export interface TimeRange {
  gte?: string;
  gt?: string;
  lte?: string;
  lt?: string;
}

/** The tenants a caller may see: a list (a tenant token is always exactly its own), or null for all (admin). */
export type Tenants = readonly string[] | null;

export interface AttemptFilter {
  tenants: Tenants;
  destinationIds?: readonly string[];
  /** Attempts to destinations of these types (interface.md's names), as the destinations table has them now. */
  destinationTypes?: readonly string[];
  eventIds?: readonly string[];
  statuses?: readonly AttemptStatus[];
  topics?: readonly string[];
  time?: TimeRange;
}

export interface EventFilter {
  tenants: Tenants;
  /** These event ids. */
  ids?: readonly string[];
  /** Events delivered (routed) to any of these destinations. */
  destinationIds?: readonly string[];
  /** Events with a delivery (to one of destinationIds, when given) in one of these states. */
  statuses?: readonly EventStatus[];
  topics?: readonly string[];
  /** Bounds on the event time. */
  time?: TimeRange;
}

export interface AttemptView {
  id: string;
  tenant_id: string;
  destination_id: string;
  event_id: string;
  topic: string;
  /** interface.md's two: a canceled attempt (stored `canceled`) is shown failed. */
  status: 'success' | 'failed';
  code: string;
  /** Absent when the destination answered nothing worth keeping. */
  response_data?: Record<string, unknown>;
  attempt_number: number;
  manual: boolean;
  final: boolean;
  /** Absent for attempts recorded without a duration. */
  duration_ms?: number;
  time: string;
}

/**
 * An event as the API shows it: the embedded event's fields, plus its delivery outcome. Optional
 * fields the contract types as strings are left out when absent, never null: clients that validate
 * responses refuse null there.
 */
export interface EventView extends EmbeddedEvent {
  /** When a delivery (to the destinations in scope) succeeded; absent while none has. */
  successful_at?: string;
  /**
   * The delivery's status, when the listing is scoped to one destination; `scheduled` for an event
   * whose deliveries are not due yet, in every listing.
   */
  status?: string;
  /** A scheduled event: when its deliveries are due. */
  deliver_at?: string;
}

/** An attempt as read: its view's fields with the time still a Date, and where its event is stored. */
export type AttemptRow = Omit<AttemptView, 'status' | 'time' | 'response_data' | 'duration_ms'> & {
  status: AttemptStatus;
  time: Date;
  response_data: Record<string, unknown> | null;
  duration_ms: number | null;
  event_received_key: string | null;
};

export const ATTEMPT_COLUMNS =
  'a.id, a.tenant_id, a.destination_id, a.event_id, a.topic, a.status, a.code, a.response_data, a.attempt_number, a.manual, a.final, a.duration_ms, a.time, ' +
  `${keyText('a.event_received_at')} AS event_received_key`;

/**
 * Where each listed attempt's event is stored (its received_at, as key text): kept beside the view
 * rather than in it, so the API shape is unchanged and include=event can still read it (eventsOf).
 */
export const eventPartitionOf = new WeakMap<object, string>();

export const attemptView = (r: AttemptRow): AttemptView => {
  const view = attemptFields(r);
  if (r.event_received_key) eventPartitionOf.set(view, r.event_received_key);
  return view;
};

/**
 * An attempt that ended without a request (its destination deleted or disabled, its event or the
 * destination's queue canceled) is stored `canceled` with code `CANCELED`, and shown as interface.md
 * has attempts: failed, code ERR, `response_data.reason` saying why (clients refuse a third status).
 */
const attemptFields = (r: AttemptRow): AttemptView => ({
  id: r.id,
  tenant_id: r.tenant_id,
  destination_id: r.destination_id,
  event_id: r.event_id,
  topic: r.topic,
  status: r.status === 'canceled' ? 'failed' : r.status,
  code: r.status === 'canceled' ? 'ERR' : r.code,
  ...(r.response_data === null ? {} : { response_data: r.response_data }),
  attempt_number: r.attempt_number,
  manual: r.manual,
  final: r.final,
  ...(r.duration_ms === null ? {} : { duration_ms: r.duration_ms }),
  time: r.time.toISOString(),
});

export interface EventRow {
  id: string;
  tenant_id: string;
  destination_id: string | null;
  topic: string;
  time: Date;
  eligible_for_retry: boolean;
  metadata: Record<string, unknown> | null;
  data?: unknown;
  /** Internal: where its rows live (received_at, to the microsecond), and where the router sent it. */
  received_key: string | null;
  routed: string[];
  deliver_at?: Date | null;
}

export const eventColumns = (withData: boolean) =>
  `e.id, e.tenant_id, e.destination_id, e.topic, e.time, e.eligible_for_retry, e.metadata${withData ? ', e.data' : ''}, ` +
  `${keyText('e.received_at')} AS received_key, e.matched_destination_ids || e.skipped_destination_ids AS routed, e.deliver_at`;

export interface DeliveryState {
  tenant_id: string;
  event_id: string;
  destination_id: string;
  topic: string;
  status: string;
  successful_at: Date | null;
}

/** The embedded event of an attempt (`include=event` / `include=event.data`). */
export interface EmbeddedEvent {
  id: string;
  tenant_id: string;
  /** Absent unless the event was published to one destination. */
  destination_id?: string;
  topic: string;
  time: string;
  eligible_for_retry: boolean;
  metadata: Record<string, unknown>;
  data?: unknown;
}

export function eventView(r: EventRow, states: DeliveryState[], withData: boolean, scopedDestination?: string): EventView {
  let successful: Date | null = null;
  for (const s of states) if (s.successful_at && (!successful || s.successful_at < successful)) successful = s.successful_at;
  // A listing scoped to one destination shows that one (published to it or fanned out to it).
  const v: EventView = {
    ...embedded({ ...r, destination_id: scopedDestination ?? r.destination_id }, false),
    ...(successful ? { successful_at: successful.toISOString() } : {}),
  };
  if (withData) v.data = r.data ?? null;
  if (scopedDestination !== undefined) v.status = states[0]?.status ?? 'pending';
  if (r.deliver_at) {
    v.deliver_at = r.deliver_at.toISOString();
    // Per event (no destination in scope) canceled once every delivery is, as a cancel makes them at
    // once, and from then on; a destination disabled when it was routed (`skipped`) never had one to cancel.
    const live = states.filter((s) => s.status !== 'skipped');
    if (scopedDestination === undefined && live.length && live.every((s) => s.status === 'canceled')) v.status = 'canceled';
    // Not due yet: what is still pending is scheduled (an event whose deliveries are not stored yet, too).
    else if (r.deliver_at.getTime() > Date.now()) {
      if (scopedDestination !== undefined ? v.status === 'pending' : states.length === 0 || live.some((s) => s.status === 'pending'))
        v.status = 'scheduled';
    }
  }
  return v;
}

export function embedded(r: EventRow, withData: boolean): EmbeddedEvent {
  const e: EmbeddedEvent = {
    id: r.id,
    tenant_id: r.tenant_id,
    ...(r.destination_id === null ? {} : { destination_id: r.destination_id }),
    topic: r.topic,
    time: r.time.toISOString(),
    eligible_for_retry: r.eligible_for_retry,
    metadata: r.metadata ?? {},
  };
  if (withData) e.data = r.data ?? null;
  return e;
}
