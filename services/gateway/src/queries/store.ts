/**
 * Every read query over events, deliveries and attempts (the write side is the pipeline's), and the
 * metrics API's counts, for the gateway's routes: attempts.ts, events.ts, metrics.ts and peer-metrics.ts hold the
 * queries, sql.ts how they are built and paged (keyset, with shared/src/db/paging.ts's cursors),
 * views.ts what they return. The store throws no
 * HTTP errors: a route checks the paging parameters first (pageProblems) and maps a null (nothing
 * visible) to its 404.
 */
import type { Knex } from '@switchyard/shared/db/index.ts';
import type { ListPage, Page } from '@switchyard/shared/db/paging.ts';
import { eventAttempts, getAttempt, listAttempts } from './attempts.ts';
import { eventsOf, getEvent, listEvents } from './events.ts';
import { type AttemptDimension, attemptCounts, type CountPoint, type CountQuery, eventCounts } from './metrics.ts';
import { type PeerAnswer, type PeerQuery, peerAttemptMetrics, peerEventMetrics } from './peer-metrics.ts';
import { type Q, run } from './sql.ts';
import type { AttemptFilter, AttemptView, EmbeddedEvent, EventFilter, EventView, Tenants } from './views.ts';

export class QueryStore {
  private readonly q: Q;
  constructor(db: Knex, pageMaxBytes: number) {
    this.q = { db, pageMaxBytes };
  }

  /** Whether a tenant and (optionally) its destination exist, in one round trip. */
  async exists(tenantId: string, destinationId: string): Promise<{ tenant: boolean; destination: boolean }> {
    const [row] = await run<{ t: boolean; d: boolean }>(
      this.q.db,
      'SELECT EXISTS (SELECT 1 FROM tenants WHERE id = ?) AS t, EXISTS (SELECT 1 FROM destinations WHERE tenant_id = ? AND id = ?) AS d',
      [tenantId, tenantId, destinationId],
    );
    return { tenant: row?.t ?? false, destination: row?.d ?? false };
  }

  listAttempts(f: AttemptFilter, page: ListPage, opts: { embed?: 'event' | 'event.data' } = {}): Promise<Page<AttemptView>> {
    return listAttempts(this.q, f, page, opts);
  }

  getAttempt(id: string, scope: { tenants: Tenants; destinationId?: string }): Promise<AttemptView | null> {
    return getAttempt(this.q, id, scope);
  }

  eventAttempts(tenants: Tenants, eventId: string, destinationIds?: readonly string[]): Promise<AttemptView[] | null> {
    return eventAttempts(this.q, tenants, eventId, destinationIds);
  }

  eventsOf(keys: readonly { tenant_id: string; event_id: string }[], withData: boolean): Promise<Map<string, EmbeddedEvent>> {
    return eventsOf(this.q, keys, withData);
  }

  listEvents(f: EventFilter, page: ListPage, opts: { scopedDestination?: string } = {}): Promise<Page<EventView>> {
    return listEvents(this.q, f, page, opts);
  }

  getEvent(tenants: Tenants, eventId: string, destinationId?: string): Promise<EventView | null> {
    return getEvent(this.q, tenants, eventId, destinationId);
  }

  attemptCounts(query: CountQuery<AttemptDimension>): Promise<CountPoint[]> {
    return attemptCounts(this.q, query);
  }

  eventCounts(query: CountQuery<'topic'>): Promise<CountPoint[]> {
    return eventCounts(this.q, query);
  }

  /** The metrics API in the other service's form, from the attempt rows. */
  peerAttemptMetrics(query: PeerQuery): Promise<PeerAnswer> {
    return peerAttemptMetrics(this.q.db, query);
  }

  /** The metrics API in the other service's form, from the event rows. */
  peerEventMetrics(query: PeerQuery): Promise<PeerAnswer> {
    return peerEventMetrics(this.q.db, query);
  }
}
