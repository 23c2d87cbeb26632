import type { Destination, DeliveryRecord, DestinationSnapshot, EventRecord } from '@switchyard/shared/model/index.ts';
import { matchesFilter, matchesTopic } from '@switchyard/shared/routing/match.ts';

/** What the router needs from the outside world; main.ts wires the real ones. */
export interface RouterDeps {
  destinationsOf(tenantId: string): Promise<Destination[]>;
  snapshot(d: Destination): DestinationSnapshot;
  emit(deliveries: DeliveryRecord[]): Promise<void>;
}

export interface RouteResult {
  deliveries: DeliveryRecord[];
  skippedDisabled: string[];
}

/** The destinations an event goes to: enabled ones whose topics and filter match, or the one it names. */
export function selectDestinations(event: EventRecord, destinations: Destination[]): { matched: Destination[]; disabled: Destination[] } {
  const candidates = destinations.filter((d) =>
    event.destination_id ? d.id === event.destination_id : matchesTopic(d.topics, event.topic) && matchesFilter(d.filter, event),
  );
  return { matched: candidates.filter((d) => d.disabled_at === null), disabled: candidates.filter((d) => d.disabled_at !== null) };
}

export function createRouter(deps: RouterDeps) {
  return async function route(event: EventRecord): Promise<RouteResult> {
    const { matched, disabled } = selectDestinations(event, await deps.destinationsOf(event.tenant_id));
    const deliveries = matched.map((d) => ({ event, destination: deps.snapshot(d), attempt_number: 1, manual: false }));
    await deps.emit(deliveries);
    return { deliveries, skippedDisabled: disabled.map((d) => d.id) };
  };
}
