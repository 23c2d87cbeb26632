import type { InRecord, OutRecord } from '@switchyard/shared/bus/index.ts';
import { jsonOnce } from '@switchyard/shared/bus/record-codec.ts';
import type { RoutableDestination } from '@switchyard/shared/db/stores/destinations.ts';
import type { DeliveryRecord, DestinationRoute, EventRecord, RoutedRecord } from '@switchyard/shared/model/index.ts';
import { checkEvent } from './validate.ts';
import { matchesFilter, matchesTopic } from '@switchyard/shared/routing/match.ts';

/** What the router needs from the outside world; main.ts wires the real ones. */
export interface RouterDeps {
  topics: readonly string[];
  /** KAFKA_MAX_MESSAGE_BYTES: the largest record batch the bus writes. */
  maxMessageBytes: number;
  /** Destinations of the tenants that exist; a tenant missing from the map does not exist. */
  destinationsOf(tenantIds: string[]): Promise<Map<string, RoutableDestination[]>>;
  /** Positions (into the list) of the events this batch may route; the rest are repeats. */
  claim(claims: Array<{ tenant_id: string; id: string; partition: number; offset: string }>): Promise<Set<number>>;
  /**
   * Writes everything of one batch; resolves once Kafka acknowledged it all. `json` hands back each
   * event's and destination snapshot's JSON as the size check wrote it, to splice into the records.
   */
  emit(out: {
    deliveries: DeliveryRecord[];
    routed: RoutedRecord[];
    deadLetters: Array<OutRecord & { reason: string }>;
    json: (o: object) => string;
  }): Promise<void>;
}

export interface BatchResult {
  routed: RoutedRecord[];
  duplicates: EventRecord[];
  deadLetters: Array<{ offset: string; reason: string }>;
}

/** The destinations an event goes to: enabled ones whose topics and filter match, or the one it names. */
export function selectDestinations<D extends DestinationRoute>(event: EventRecord, destinations: D[]): { matched: D[]; disabled: D[] } {
  const candidates = destinations.filter((d) =>
    event.destination_id ? d.id === event.destination_id : matchesTopic(d.topics, event.topic) && matchesFilter(d.filter, event),
  );
  return { matched: candidates.filter((d) => d.disabled_at === null), disabled: candidates.filter((d) => d.disabled_at !== null) };
}

/**
 * A record of the events topic as it came, for the dead-letter topic: its key, its headers and the
 * bytes of its value as written (the consumer keeps them: `keepRaw`), never the value as parsed,
 * which the validator fills with defaults; with the reason in a header of its own.
 */
function deadLetterOf(r: InRecord<unknown>, reason: string): OutRecord & { reason: string; offset: string } {
  const value = r.raw !== undefined ? r.raw : Buffer.from(JSON.stringify(r.value ?? null));
  return { key: r.key, value, headers: { ...r.headers, 'x-dead-letter-reason': reason.slice(0, 1000) }, reason, offset: r.offset };
}

/**
 * Room a record needs beside its event and destination: its key, headers and batch framing, its own
 * fields, and those a sender's retry adds (due_at, parked, turn_at).
 */
const RECORD_ROOM_BYTES = 64 * 1024;

/**
 * Bytes of `texts` as UTF-8 plus `extra`, or 0 when they are surely within `limit`: a UTF-16 unit
 * takes at most 3 bytes, so an ordinary event is never counted.
 */
function bytesNear(texts: string[], extra: number, limit: number): number {
  if (texts.reduce((n, s) => n + s.length * 3, extra) <= limit) return 0;
  return texts.reduce((n, s) => n + Buffer.byteLength(s), extra);
}

const tooLargeReason = (what: string, bytes: number, max: number) =>
  `too large: ${what} would be about ${bytes} bytes, over KAFKA_MAX_MESSAGE_BYTES (${max}) less ${RECORD_ROOM_BYTES} for framing`;

/**
 * Why an event's routed record, or its delivery record to one of `matched`, would be larger than the
 * bus can write (each carries the event as JSON), or null when all fit. A record that can never be
 * written would fail its whole batch for good; the event is dead-lettered instead. The JSON is made
 * once, for the records too (`json`).
 */
function tooLarge(
  event: EventRecord,
  { matched, disabled }: { matched: RoutableDestination[]; disabled: RoutableDestination[] },
  json: (o: object) => string,
  max: number,
): string | null {
  const limit = max - RECORD_ROOM_BYTES;
  const eventJson = json(event);
  // The routed record lists both: each id quoted, with a comma.
  let ids = 0;
  for (const d of matched) ids += d.id.length + 3;
  for (const d of disabled) ids += d.id.length + 3;
  const routed = bytesNear([eventJson], ids, limit);
  if (routed > limit) return tooLargeReason('its routed record', routed, max);
  for (const d of matched) {
    const delivery = bytesNear([eventJson, json(d.snapshot)], 0, limit);
    if (delivery > limit) return tooLargeReason(`its delivery record to destination ${d.id}`, delivery, max);
  }
  return null;
}

/**
 * Routes one fetched batch of the events topic: invalid records to the dead-letter topic, repeats of
 * an already routed event nowhere, every other event to one delivery per matching destination.
 * Destinations are read fresh for each batch, so a change that has answered is honoured by every
 * event routed after it, with one query per batch rather than per event.
 */
export function createRouter(deps: RouterDeps) {
  return async function routeBatch(records: InRecord<unknown>[]): Promise<BatchResult> {
    const deadLetters: Array<OutRecord & { reason: string; offset: string }> = [];
    const valid: Array<{ event: EventRecord; record: InRecord<unknown> }> = [];
    for (const r of records) {
      if (r.decodeError) {
        deadLetters.push(deadLetterOf(r, `invalid JSON: ${r.decodeError}`));
        continue;
      }
      const checked = checkEvent(r.value, r, deps.topics);
      if (checked.ok) valid.push({ event: checked.event, record: r });
      else deadLetters.push(deadLetterOf(r, checked.reason));
    }

    const byTenant = await deps.destinationsOf([...new Set(valid.map((v) => v.event.tenant_id))]);
    const json = jsonOnce();
    const routable = valid.flatMap((v) => {
      const destinations = byTenant.get(v.event.tenant_id);
      if (!destinations) {
        deadLetters.push(deadLetterOf(v.record, `unknown tenant: ${v.event.tenant_id}`));
        return [];
      }
      const selected = selectDestinations(v.event, destinations);
      const why = tooLarge(v.event, selected, json, deps.maxMessageBytes);
      if (why) {
        deadLetters.push(deadLetterOf(v.record, why));
        return [];
      }
      return [{ ...v, ...selected }];
    });

    const allowed = await deps.claim(
      routable.map((v) => ({ tenant_id: v.event.tenant_id, id: v.event.id, partition: v.record.partition, offset: v.record.offset })),
    );
    const deliveries: DeliveryRecord[] = [];
    const routed: RoutedRecord[] = [];
    const duplicates: EventRecord[] = [];
    routable.forEach(({ event, record, matched, disabled }, i) => {
      if (!allowed.has(i)) {
        duplicates.push(event);
        return;
      }
      // The event's own place, so that a sender can tell a routing of it again after a crash (ordered destinations).
      const event_position = { partition: record.partition, offset: record.offset };
      for (const d of matched) deliveries.push({ event, destination: d.snapshot, attempt_number: 1, manual: false, event_position });
      routed.push({ event, matched_destination_ids: matched.map((d) => d.id), skipped_destination_ids: disabled.map((d) => d.id) });
    });
    await deps.emit({ deliveries, routed, deadLetters, json });
    return { routed, duplicates, deadLetters: deadLetters.map(({ offset, reason }) => ({ offset, reason })) };
  };
}
