/**
 * One client per destination, shared by its deliveries; a destination is its tenant's (`destinationKey`:
 * tenants choose ids, so two tenants' `default` are two clients). A delivery whose destination's config
 * or credentials differ from the cached client's gets a new client (the old one closes once its
 * deliveries in flight are done), so rotated credentials take effect on the next delivery. Clients of
 * destinations that were deleted or disabled (`retain`), or that had no delivery for `idleMs`, are
 * closed by `sweep`, which the service runs periodically.
 */
import { destinationKey } from '@switchyard/shared/model/index.ts';
import type { Client, DeliveryInput, Outcome, Sender, TypeSender } from './sender.ts';

/** Unused this long, a client is closed (it is opened again on the next delivery). */
export const CLIENT_IDLE_MS = 10 * 60_000;

/** A destination as the cache names it: an id is unique only within its tenant. */
export interface DestinationRef {
  tenant_id: string;
  id: string;
}

interface Entry {
  ref: DestinationRef;
  client: Client;
  configJson: string;
  credentials: Readonly<Record<string, unknown>>;
  inflight: number;
  /** Replaced or swept: closes once `inflight` reaches 0. */
  retired: boolean;
  closed: Promise<void> | null;
  usedAt: number;
}

export interface ClientCache extends Sender {
  /** Closes the client of a destination that was deleted or disabled (after its deliveries in flight). */
  forget(destination: DestinationRef): void;
  /**
   * Closes idle clients, and those of destinations `retain` does not keep (deleted or disabled ones).
   * `retain` gets the cached destinations and answers the `destinationKey`s of those still deliverable.
   */
  sweep(retain?: (destinations: DestinationRef[]) => Promise<ReadonlySet<string>>): Promise<void>;
  /** Destinations with a client now. */
  readonly size: number;
}

export interface ClientCacheOptions {
  idleMs?: number;
  now?: () => number;
  /** Told about a client that failed to close (it is dropped all the same). */
  onCloseError?: (err: unknown) => void;
}

function sameCredentials(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): boolean {
  // The store shares one opened object per ciphertext, so identity settles the common case.
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

export function createClientCache(sender: TypeSender, opts: ClientCacheOptions = {}): ClientCache {
  const idleMs = opts.idleMs ?? CLIENT_IDLE_MS;
  const now = opts.now ?? Date.now;
  const entries = new Map<string, Entry>();
  const closing = new Set<Promise<void>>();

  const closeEntry = (e: Entry) => {
    if (e.closed) return;
    e.closed = e.client
      .close()
      .catch((err: unknown) => opts.onCloseError?.(err))
      .finally(() => closing.delete(e.closed as Promise<void>));
    closing.add(e.closed);
  };
  const retire = (key: string, e: Entry) => {
    if (entries.get(key) === e) entries.delete(key);
    e.retired = true;
    if (e.inflight === 0) closeEntry(e);
  };

  const clientFor = (input: DeliveryInput): Entry => {
    const { destination, credentials } = input;
    const configJson = JSON.stringify(destination.config);
    const key = destinationKey(destination.tenant_id, destination.id);
    const cached = entries.get(key);
    if (cached && cached.configJson === configJson && sameCredentials(cached.credentials, credentials)) return cached;
    if (cached) retire(key, cached);
    const entry: Entry = {
      ref: { tenant_id: destination.tenant_id, id: destination.id },
      client: sender.open({
        id: destination.id,
        tenant_id: destination.tenant_id,
        type: destination.type,
        config: destination.config,
        credentials,
      }),
      configJson,
      credentials,
      inflight: 0,
      retired: false,
      closed: null,
      usedAt: now(),
    };
    entries.set(key, entry);
    return entry;
  };

  return {
    async deliver(input: DeliveryInput): Promise<Outcome> {
      const e = clientFor(input);
      e.inflight++;
      e.usedAt = now();
      try {
        return await e.client.deliver({ event: input.event, deliveryMetadata: input.deliveryMetadata, signal: input.signal });
      } finally {
        e.inflight--;
        if (e.retired && e.inflight === 0) closeEntry(e);
      }
    },
    forget(destination) {
      const key = destinationKey(destination.tenant_id, destination.id);
      const e = entries.get(key);
      if (e) retire(key, e);
    },
    async sweep(retain) {
      const idleBefore = now() - idleMs;
      for (const [key, e] of entries) if (e.inflight === 0 && e.usedAt < idleBefore) retire(key, e);
      if (retain && entries.size > 0) {
        const keep = await retain([...entries.values()].map((e) => e.ref));
        for (const [key, e] of entries) if (!keep.has(key)) retire(key, e);
      }
      await Promise.all(closing);
    },
    get size() {
      return entries.size;
    },
    async close() {
      // Called once the consumers stopped: nothing is in flight any more.
      const all = [...entries.values()];
      entries.clear();
      for (const e of all) {
        e.retired = true;
        closeEntry(e);
      }
      await Promise.all(closing);
      await sender.close();
    },
  };
}
