import type { InRecord, OutRecord } from '@switchyard/shared/bus/index.ts';
import type { RoutableDestination } from '@switchyard/shared/db/stores/destinations.ts';
import type { DeliveryRecord, DestinationRoute, EventRecord, RoutedRecord } from '@switchyard/shared/model/index.ts';
import { checkEvent } from './validate.ts';
import { matchesFilter, matchesTopic } from '@switchyard/shared/routing/match.ts';

/** What the router needs from the outside world; main.ts wires the real ones. */
export interface RouterDeps {
  topics: readonly string[];
  /** Destinations of the tenants that exist; a tenant missing from the map does not exist. */
  destinationsOf(tenantIds: string[]): Promise<Map<string, RoutableDestination[]>>;
  /** Positions (into the list) of the events this batch may route; the rest are repeats. */
  claim(claims: Array<{ tenant_id: string; id: string; partition: number; offset: string }>): Promise<Set<number>>;
  /** Writes everything of one batch; resolves once Kafka acknowledged it all. */
  emit(out: { deliveries: DeliveryRecord[]; routed: RoutedRecord[]; deadLetters: Array<OutRecord & { reason: string }> }): Promise<void>;
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
    const known = valid.filter((v) => {
      if (byTenant.has(v.event.tenant_id)) return true;
      deadLetters.push(deadLetterOf(v.record, `unknown tenant: ${v.event.tenant_id}`));
      return false;
    });

    const allowed = await deps.claim(
      known.map((v) => ({ tenant_id: v.event.tenant_id, id: v.event.id, partition: v.record.partition, offset: v.record.offset })),
    );
    const deliveries: DeliveryRecord[] = [];
    const routed: RoutedRecord[] = [];
    const duplicates: EventRecord[] = [];
    known.forEach(({ event, record }, i) => {
      if (!allowed.has(i)) {
        duplicates.push(event);
        return;
      }
      const { matched, disabled } = selectDestinations(event, byTenant.get(event.tenant_id) ?? []);
      // The event's own place, so that a sender can tell a routing of it again after a crash (ordered destinations).
      const event_position = { partition: record.partition, offset: record.offset };
      for (const d of matched) deliveries.push({ event, destination: d.snapshot, attempt_number: 1, manual: false, event_position });
      routed.push({ event, matched_destination_ids: matched.map((d) => d.id), skipped_destination_ids: disabled.map((d) => d.id) });
    });
    await deps.emit({ deliveries, routed, deadLetters });
    return { routed, duplicates, deadLetters: deadLetters.map(({ offset, reason }) => ({ offset, reason })) };
  };
}
