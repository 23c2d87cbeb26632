import { createBatcher } from '@switchyard/shared/batcher.ts';
import type { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import type { DestinationRoute } from '@switchyard/shared/model/index.ts';

interface Entry {
  at: number;
  exists: boolean;
  destinations: DestinationRoute[];
  loading?: Promise<Entry>;
}

/**
 * What the publish path needs to know about a tenant (does it exist, which destinations it has),
 * kept in memory so a publish makes no database round trip. This instance drops a tenant's entry
 * as soon as it changes anything of that tenant; other instances see a change within `ttlMs`.
 * Routing itself is decided by the router from fresh data, so this only shapes the 202 answer
 * (destination_ids) and the 404 for unknown tenants. Loads of tenants missed at the same time share
 * one query, and read only the routing columns (no secret is opened).
 */
export class RoutingCache {
  private readonly entries = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly load: (tenantId: string) => Promise<Entry>;

  constructor(destinations: DestinationStore, ttlMs: number, maxEntries = 100_000) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
    this.load = createBatcher(async (ids: string[]) => {
      const routes = await destinations.routesOf([...new Set(ids)]);
      const at = Date.now();
      return ids.map((id) => ({ at, exists: routes.has(id), destinations: routes.get(id) ?? [] }));
    }, 500);
  }

  async get(tenantId: string): Promise<{ exists: boolean; destinations: DestinationRoute[] }> {
    const e = this.entries.get(tenantId);
    if (e?.loading) return e.loading;
    if (e && Date.now() - e.at < this.ttlMs) return e;
    // Concurrent publishes for one tenant share a single load.
    const placeholder: Entry = { at: 0, exists: false, destinations: [] };
    placeholder.loading = this.load(tenantId).then(
      (loaded) => {
        // Keep the result only if no invalidation happened while it loaded.
        if (this.entries.get(tenantId) === placeholder) this.entries.set(tenantId, loaded);
        return loaded;
      },
      (err: unknown) => {
        if (this.entries.get(tenantId) === placeholder) this.entries.delete(tenantId);
        throw err;
      },
    );
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(tenantId, placeholder);
    return placeholder.loading;
  }

  invalidate(tenantId: string): void {
    this.entries.delete(tenantId);
  }
}
