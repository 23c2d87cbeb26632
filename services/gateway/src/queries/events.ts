/**
 * The event queries: the event listings and one event, and the event rows and delivery states the
 * attempt queries embed. A listing that returns event data also stops a page at a byte bound
 * (API_PAGE_MAX_BYTES): it takes items while the payload bytes of those already on it stay under
 * the bound, so a page holds at most the bound plus one item, and at least one item. Sizes come
 * from events.payload_bytes, never from the payloads, and payloads past the cut are not read out of
 * the database.
 */
import { keyText, type ListPage, type Page, type Pagination } from '@switchyard/shared/db/paging.ts';
import {
  bytesCut,
  type Cond,
  cond,
  destinationPairs,
  emptyPage,
  FANOUT_MAX,
  groupBy,
  inList,
  type KeyRow,
  keysetPage,
  pairKey,
  type Q,
  run,
  stripKeys,
  timeConds,
  where,
} from './sql.ts';
import {
  type DeliveryState,
  type EmbeddedEvent,
  embedded,
  type EventFilter,
  type EventRow,
  type EventStatus,
  type EventView,
  eventColumns,
  eventPartitionOf,
  eventView,
  type Tenants,
} from './views.ts';

/**
 * Payload bytes of the event row `e`: data and metadata as JSON text, as the writer stored them
 * (migration 005). Rows written before that column existed are measured here instead, which reads
 * (detoasts and prints) their payloads: correct, but costlier, until retention drops those rows.
 */
export const PAYLOAD_BYTES = 'coalesce(e.payload_bytes, octet_length(e.data::text) + coalesce(octet_length(e.metadata::text), 0))';

/** An event's key, the partition it was found in, and the bytes a page counts for it. */
interface SizeRow {
  tenant_id: string;
  id: string;
  received_key: string;
  bytes: number;
}
/** What include=event counts per event: it embeds the metadata without the data. */
export const METADATA_BYTES = 'coalesce(octet_length(e.metadata::text), 0)';

/**
 * The span of the keys' received times, as a range on `col`: enough for partition pruning, and a
 * range (unlike a list of instants) leaves the index condition on the ids alone.
 */
function spanOf(col: string, keys: readonly EventKey[]): Cond[] {
  const times = keys.map((k) => k.received as string).sort(); // fixed-width UTC text sorts in time order
  return [cond(`${col} >= ?::timestamptz`, times[0] as string), cond(`${col} <= ?::timestamptz`, times.at(-1) as string)];
}

/** An event named by tenant and id, with the server time it was received (microsecond text) when known. */
export interface EventKey {
  tenant: string;
  id: string;
  received?: string | null;
}

/**
 * The events of attempts, for `include=event`; keyed by tenant and event id. Attempts listed by
 * this store know their event's received_at, so those lookups are bounded to the span of the page's
 * events (per tenant: eventRows).
 */
export async function eventsOf(
  q: Q,
  keys: readonly { tenant_id: string; event_id: string }[],
  withData: boolean,
): Promise<Map<string, EmbeddedEvent>> {
  const rows = await eventRows<EventRow>(
    q,
    keys.map((k) => ({ tenant: k.tenant_id, id: k.event_id, received: eventPartitionOf.get(k) ?? null })),
    eventColumns(withData),
  );
  const out = new Map<string, EmbeddedEvent>();
  for (const [k, r] of rows) out.set(k, embedded(r, withData));
  return out;
}

/**
 * The sizes (`bytes`: an expression over the event row `e`) of the events of a page's keys, in
 * page order, read without any payload, and how many of them the page keeps under the byte bound
 * (bytesCut).
 */
export async function sizedCut(q: Q, keys: readonly EventKey[], bytes: string): Promise<{ keep: number; rows: Map<string, SizeRow> }> {
  const rows = await eventRows<SizeRow>(q, keys, `e.tenant_id, e.id, ${keyText('e.received_at')} AS received_key, ${bytes} AS bytes`);
  const keep = bytesCut(
    keys.map((k) => rows.get(pairKey(k.tenant, k.id))?.bytes ?? 0),
    q.pageMaxBytes,
  );
  return { keep, rows };
}

/**
 * Event rows by key. The pipeline stores an event's deliveries with created_at = the event's
 * received_at, so a key found through its deliveries (or an attempt) knows its event's partition:
 * the keys of each tenant are first looked up within the span of their received_at (partition
 * pruning to that span), and only keys not found there are looked up in every partition.
 */
export async function eventRows<R extends { tenant_id: string; id: string }>(
  q: Q,
  keys: readonly EventKey[],
  columns: string,
): Promise<Map<string, R>> {
  const out = new Map<string, R>();
  const lookup = async (list: readonly EventKey[], hinted: boolean) => {
    for (const [tenant, group] of groupBy(list, (k) => k.tenant)) {
      const conds = [cond('e.tenant_id = ?', tenant), inList('e.id', [...new Set(group.map((k) => k.id))])];
      if (hinted) conds.push(...spanOf('e.received_at', group));
      const w = where(conds);
      for (const row of await run<R>(q.db, `SELECT ${columns} FROM events e ${w.sql}`, w.values))
        out.set(pairKey(row.tenant_id, row.id), row);
    }
  };
  const hinted = keys.filter((k) => k.received);
  if (hinted.length) await lookup(hinted, true);
  const rest = keys.filter((k) => !out.has(pairKey(k.tenant, k.id)));
  if (rest.length) await lookup(rest, false);
  return out;
}

/**
 * Delivery states of events (optionally only towards some destinations), looked up in the
 * partition of each event (created_at = received_at) and, for events that should have more
 * delivery rows than found there (every destination they were routed to has one), everywhere.
 */
export async function deliveryStates(
  q: Q,
  events: readonly EventKey[],
  destinationIds?: readonly string[],
  expected?: Map<string, number>,
): Promise<Map<string, DeliveryState[]>> {
  const out = new Map<string, DeliveryState[]>();
  const lookup = async (list: readonly EventKey[], hinted: boolean) => {
    for (const [tenant, group] of groupBy(list, (k) => k.tenant)) {
      const conds = [cond('tenant_id = ?', tenant), inList('event_id', [...new Set(group.map((k) => k.id))])];
      if (hinted) conds.push(...spanOf('created_at', group));
      if (destinationIds?.length) conds.push(inList('destination_id', destinationIds));
      const w = where(conds);
      const rows = await run<DeliveryState>(
        q.db,
        `SELECT tenant_id, event_id, destination_id, topic, status, successful_at FROM deliveries ${w.sql}`,
        w.values,
      );
      for (const row of rows) {
        const k = pairKey(row.tenant_id, row.event_id);
        const l = out.get(k) ?? [];
        if (!l.some((x) => x.destination_id === row.destination_id)) l.push(row);
        out.set(k, l);
      }
    }
  };
  const hinted = events.filter((k) => k.received);
  if (hinted.length) await lookup(hinted, true);
  const rest = events.filter((k) => {
    const key = pairKey(k.tenant, k.id);
    if (!k.received) return true;
    const want = expected?.get(key);
    return want !== undefined && (out.get(key)?.length ?? 0) < want;
  });
  if (rest.length) await lookup(rest, false);
  return out;
}

/** How many delivery rows each event should have (toward `destinationIds`, when given). */
function expectedDeliveries(rows: Iterable<EventRow>, destinationIds?: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of rows) {
    const routed = new Set(r.routed);
    m.set(pairKey(r.tenant_id, r.id), destinationIds?.length ? destinationIds.filter((d) => routed.has(d)).length : routed.size);
  }
  return m;
}

// --- events --------------------------------------------------------------------------------

/**
 * A delivery `d` of a scheduled event not due yet: pending, and its event's deliver_at still ahead
 * (a primary-key probe of the event, in the partition its delivery names: created_at = received_at).
 */
const SCHEDULED_SQL =
  "(d.status = 'pending' AND EXISTS (SELECT 1 FROM events se WHERE se.tenant_id = d.tenant_id AND se.id = d.event_id" +
  ' AND se.received_at = d.created_at AND se.deliver_at > now()))';

/** A delivery `d` in one of `statuses`, `scheduled` included. */
function statusCond(statuses: readonly EventStatus[]): Cond {
  const plain = statuses.filter((s) => s !== 'scheduled');
  const parts: Cond[] = plain.length ? [inList('d.status', plain)] : [];
  if (statuses.includes('scheduled')) parts.push(cond(SCHEDULED_SQL));
  return parts.length === 1 ? (parts[0] as Cond) : cond(`(${parts.map((c) => c.sql).join(' OR ')})`, ...parts.flatMap((c) => c.values));
}

/** One status of a delivery `d`, as the leading conditions of a branch (the deliveries_status index). */
const oneStatus = (s: EventStatus): Cond[] =>
  s === 'scheduled' ? [cond("d.status = 'pending'"), cond(SCHEDULED_SQL)] : [cond('d.status = ?', s)];

/**
 * Events, newest event time first. Without delivery filters the listing reads events directly;
 * with a destination or status filter it pages over the deliveries (which carry the event time)
 * and then loads the events of the page. Either way a page ends where the payload bytes of its
 * events reach the bound: read directly, the statement cuts it (running sum of payload_bytes);
 * through deliveries, the events' sizes are read first, and the page's events only once it is cut.
 */
export async function listEvents(
  q: Q,
  f: EventFilter,
  page: ListPage,
  opts: { scopedDestination?: string } = {},
): Promise<Page<EventView>> {
  const statuses = f.statuses?.length ? [...new Set(f.statuses)] : undefined;
  const destinations = f.destinationIds?.length ? f.destinationIds : undefined;
  let keys: (EventKey & { time: Date })[];
  let pagination: Pagination;
  let loaded: Map<string, EventRow> | undefined;

  if (!destinations && !(statuses && f.tenants)) {
    // events (tenant_id, time, id) per tenant, or (time, id, tenant_id) across tenants.
    const common: Cond[] = [];
    if (f.ids?.length) common.push(inList('e.id', f.ids));
    if (f.topics?.length) common.push(inList('e.topic', f.topics));
    common.push(...timeConds('e.time', f.time));
    if (statuses) {
      // Admin, every tenant, status only: no index leads with status across tenants, so each
      // event in time order is checked for such a delivery (a primary-key probe).
      const c = statusCond(statuses);
      common.push(
        cond(`EXISTS (SELECT 1 FROM deliveries d WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id AND ${c.sql})`, ...c.values),
      );
    }
    let branches: Cond[][] = [[]];
    if (f.tenants) {
      if (f.tenants.length <= FANOUT_MAX) branches = f.tenants.map((t) => [cond('e.tenant_id = ?', t)]);
      else common.push(inList('e.tenant_id', f.tenants));
    }
    const res = await keysetPage<EventRow & KeyRow>(
      q.db,
      {
        kind: 'evt',
        select: `${eventColumns(true)}, e.time AS k_time, e.id AS k_id, e.tenant_id AS k_tenant, ${keyText('e.time')} AS k_c, ${PAYLOAD_BYTES} AS k_size`,
        from: 'events e',
        time: 'e.time',
        id: 'e.id',
        tenant: 'e.tenant_id',
        idType: 'text',
        common,
        branches,
        maxBytes: q.pageMaxBytes,
      },
      page,
    );
    pagination = res.pagination;
    loaded = new Map(res.rows.map((r) => [pairKey(r.tenant_id, r.id), stripKeys(r) as EventRow]));
    keys = res.rows.map((r) => ({ tenant: r.tenant_id, id: r.id, time: r.time, received: r.received_key }));
  } else {
    // deliveries (tenant_id, destination_id, event_time, event_id, status) per destination, or
    // (tenant_id, status, event_time, event_id) per status; grouped to one row per event.
    const common: Cond[] = [];
    if (f.ids?.length) common.push(inList('d.event_id', f.ids));
    if (f.topics?.length) common.push(inList('d.topic', f.topics));
    common.push(...timeConds('d.event_time', f.time));
    let branches: Cond[][];
    if (destinations) {
      const pairs = await destinationPairs(q, f.tenants, destinations);
      if (!pairs.length) return emptyPage(page);
      if (statuses) common.push(statusCond(statuses));
      if (pairs.length <= FANOUT_MAX) {
        branches = pairs.map(([t, d]) => [cond('d.tenant_id = ?', t), cond('d.destination_id = ?', d)]);
      } else {
        branches = [[inList('d.tenant_id', [...new Set(pairs.map((p) => p[0]))]), inList('d.destination_id', destinations)]];
      }
    } else {
      const tenants = f.tenants ?? [];
      const combos = tenants.flatMap((t) => (statuses ?? []).map((s): [string, EventStatus] => [t, s]));
      branches =
        combos.length <= FANOUT_MAX
          ? combos.map(([t, s]) => [cond('d.tenant_id = ?', t), ...oneStatus(s)])
          : [[inList('d.tenant_id', tenants), statusCond(statuses ?? [])]];
    }
    const found = new Map<string, EventRow>();
    const res = await keysetPage<KeyRow & { k_tenant: string; k_recv: string }>(
      q.db,
      {
        kind: 'evt',
        select: `d.event_time AS k_time, d.event_id AS k_id, d.tenant_id AS k_tenant, ${keyText('min(d.created_at)')} AS k_recv, ${keyText('d.event_time')} AS k_c`,
        from: 'deliveries d',
        group: { by: 'd.event_time, d.event_id, d.tenant_id', outer: 'k_time, k_id, k_tenant, min(k_recv) AS k_recv, min(k_c) AS k_c' },
        time: 'd.event_time',
        id: 'd.event_id',
        tenant: 'd.tenant_id',
        idType: 'text',
        common,
        branches,
      },
      page,
      async (rows) => {
        const ks = rows.map((r) => ({ tenant: r.k_tenant, id: r.k_id, received: r.k_recv }));
        const { keep, rows: sized } = await sizedCut(q, ks, PAYLOAD_BYTES);
        // Only then the events that stay, each from the partition it was found in: neither data
        // nor metadata past the cut leaves the database.
        const stay = ks.slice(0, keep).flatMap((k) => {
          const r = sized.get(pairKey(k.tenant, k.id));
          return r ? [{ tenant: r.tenant_id, id: r.id, received: r.received_key }] : [];
        });
        for (const [key, row] of await eventRows<EventRow>(q, stay, eventColumns(true))) found.set(key, row);
        return keep;
      },
    );
    pagination = res.pagination;
    keys = res.rows.map((r) => ({ tenant: r.k_tenant, id: r.k_id, time: r.k_time, received: r.k_recv }));
    loaded = found;
  }

  const scope = opts.scopedDestination ? [opts.scopedDestination] : destinations;
  const states = await deliveryStates(q, keys, scope, expectedDeliveries(loaded.values(), scope));
  const models = keys.map((k) => {
    const key = pairKey(k.tenant, k.id);
    const st = states.get(key) ?? [];
    // A delivery can outlive its event row (the writer lagging, or retention dropping the two
    // tables' partitions at different moments): the listing still shows it, from what the
    // delivery knows.
    const row = loaded.get(key) ?? {
      id: k.id,
      tenant_id: k.tenant,
      destination_id: null,
      topic: st[0]?.topic ?? '',
      time: k.time,
      eligible_for_retry: true,
      metadata: null,
      data: null,
      received_key: k.received ?? null,
      routed: [],
    };
    return eventView(row, st, true, opts.scopedDestination);
  });
  return { models, pagination };
}

/** An event row by id within the tenants in scope (the first tenant's, for an admin naming none). */
export async function findEvent(q: Q, tenants: Tenants, eventId: string, withData: boolean): Promise<EventRow | undefined> {
  const conds = [cond('e.id = ?', eventId)];
  if (tenants) conds.push(inList('e.tenant_id', tenants));
  const w = where(conds);
  const [row] = await run<EventRow>(
    q.db,
    `SELECT ${eventColumns(withData)} FROM events e ${w.sql} ORDER BY e.tenant_id, e.received_at LIMIT 1`,
    w.values,
  );
  return row;
}

/**
 * One event with its data, within the tenants the caller may see. With `destinationId`, only
 * when the event was routed to that destination, and with that delivery's state.
 */
export async function getEvent(q: Q, tenants: Tenants, eventId: string, destinationId?: string): Promise<EventView | null> {
  const row = await findEvent(q, tenants, eventId, true);
  if (!row) return null;
  const scope = destinationId === undefined ? undefined : [destinationId];
  const key = { tenant: row.tenant_id, id: row.id, received: row.received_key };
  const states = (await deliveryStates(q, [key], scope, expectedDeliveries([row], scope))).get(pairKey(row.tenant_id, row.id));
  if (destinationId !== undefined && !states?.length && !row.routed.includes(destinationId) && row.destination_id !== destinationId) {
    return null;
  }
  return eventView(row, states ?? [], true, destinationId);
}
