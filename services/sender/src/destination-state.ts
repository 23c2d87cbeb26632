// The destination as it is now, for the sender. A delivery record carries a snapshot of its
// destination as routed, and a retry may run hours later: before each attempt (first, retry or
// manual) the sender asks here instead. A deleted or disabled destination gets no delivery (the
// handler records a `canceled` attempt), also when one was created again under its id since (its
// created_at differs); a changed URL, secret, headers or delivery_metadata is used at once.
//
// Fast: what was read is kept in memory, and dropped when the destination-changes topic says the
// destination (or its tenant) changed; every sender instance reads that topic whole (a broadcast
// consumer). So a delivery costs no database round trip, and a change reaches the senders within
// one produce and fetch. An entry is also read again after `ttlMs`, which bounds how long a change
// whose record never came (the gateway died between storing it and writing the record) goes unseen.
import type { RoutableDestination } from '@switchyard/shared/db/stores/destinations.ts';
import type { DestinationChange, DestinationSnapshot } from '@switchyard/shared/model/index.ts';

/**
 * `canceled`: the destination's pending deliveries were canceled (POST .../cancel) after this one was made;
 * `event_canceled`: its scheduled event was canceled before it was due (controls/scheduled.ts).
 */
export type CanceledReason = 'destination_deleted' | 'destination_disabled' | 'canceled' | 'event_canceled';
export type CurrentState = { destination: DestinationSnapshot } | { canceled: CanceledReason };

export interface DestinationStateDeps {
  /** One destination as stored, secrets sealed; null when it (or its tenant) is gone. */
  load(tenantId: string, id: string): Promise<RoutableDestination | null>;
  /** How long an entry serves without a change record (the safety net above). */
  ttlMs: number;
  maxEntries?: number;
  now?: () => number;
}

interface Entry {
  at: number;
  destination: RoutableDestination | null;
  loading?: Promise<RoutableDestination | null>;
}

/** Default for `ttlMs`: a minute without a change record at worst; one read a minute per active destination. */
export const DESTINATION_STATE_TTL_MS = 60_000;

const keyOf = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;

function stateOf(d: RoutableDestination | null, delivery: DestinationSnapshot): CurrentState {
  // Created again under its id since the delivery was made: the one it was made for is deleted.
  if (!d || (delivery.created_at !== undefined && delivery.created_at !== d.snapshot.created_at))
    return { canceled: 'destination_deleted' };
  if (d.disabled_at) return { canceled: 'destination_disabled' };
  if ((delivery.cancel_epoch ?? 0) < (d.snapshot.cancel_epoch ?? 0)) return { canceled: 'canceled' };
  return { destination: d.snapshot };
}

/** A destination changed (destination_id null: every destination of the tenant). */
export type Changed = Pick<DestinationChange, 'tenant_id' | 'destination_id'>;

export class DestinationState {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners: Array<(c: Changed | null) => void> = [];
  private readonly deps: DestinationStateDeps;
  private readonly now: () => number;

  constructor(deps: DestinationStateDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
  }

  /** The destination of `snapshot` as it is now. Throws when it cannot be read (our fault: the record is retried). */
  current(snapshot: DestinationSnapshot): CurrentState | Promise<CurrentState> {
    const key = keyOf(snapshot.tenant_id, snapshot.id);
    const e = this.entries.get(key);
    if (e?.loading) return e.loading.then((d) => stateOf(d, snapshot));
    if (e && this.now() - e.at < this.deps.ttlMs) return stateOf(e.destination, snapshot);
    // Concurrent deliveries of one destination share one read; a change while it runs discards it.
    const placeholder: Entry = { at: 0, destination: null };
    placeholder.loading = this.deps.load(snapshot.tenant_id, snapshot.id).then(
      (d) => {
        if (this.entries.get(key) === placeholder) this.entries.set(key, { at: this.now(), destination: d });
        return d;
      },
      (err: unknown) => {
        if (this.entries.get(key) === placeholder) this.entries.delete(key);
        throw err;
      },
    );
    if (this.entries.size >= (this.deps.maxEntries ?? 100_000)) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.delete(key);
    this.entries.set(key, placeholder);
    return placeholder.loading.then((d) => stateOf(d, snapshot));
  }

  /** Drops what is known of a changed destination, or of every destination of a deleted tenant. */
  changed(c: Changed): void {
    if (c.destination_id !== null) this.entries.delete(keyOf(c.tenant_id, c.destination_id));
    else {
      const prefix = keyOf(c.tenant_id, '');
      for (const k of this.entries.keys()) if (k.startsWith(prefix)) this.entries.delete(k);
    }
    for (const l of this.listeners) l(c);
  }

  /** Drops everything (a change record that could not be read). */
  clear(): void {
    this.entries.clear();
    for (const l of this.listeners) l(null);
  }

  /** Calls `listener` after a change was taken in (null: any destination may have changed). */
  onChange(listener: (c: Changed | null) => void): void {
    this.listeners.push(listener);
  }
}
