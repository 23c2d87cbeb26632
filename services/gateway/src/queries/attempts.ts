/** The attempt queries: listings, one attempt, and every attempt of one event. */
import { keyText, type ListPage, type Page } from '@switchyard/shared/db/paging.ts';
import {
  type Cond,
  cond,
  destinationPairs,
  emptyPage,
  FANOUT_MAX,
  inList,
  type KeyRow,
  keysetPage,
  type Q,
  run,
  stripKeys,
  timeConds,
  where,
} from './sql.ts';
import { findEvent, METADATA_BYTES, PAYLOAD_BYTES, sizedCut } from './events.ts';
import {
  ATTEMPT_COLUMNS,
  ATTEMPT_STATUSES,
  storedStatuses,
  type AttemptFilter,
  type AttemptRow,
  type AttemptView,
  attemptView,
  type Tenants,
} from './views.ts';

/** Attempts returned for one event's deliveries, newest first. */
export const EVENT_ATTEMPTS_MAX = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Attempts, newest first. With `embed` the page will carry each attempt's event, with its data
 * (include=event.data) or its metadata only (include=event): it then ends where the bytes of what
 * it embeds reach the bound, their sizes read before any payload (the payloads are the caller's to
 * load, for this page only: eventsOf).
 */
export async function listAttempts(
  q: Q,
  f: AttemptFilter,
  page: ListPage,
  opts: { embed?: 'event' | 'event.data' } = {},
): Promise<Page<AttemptView>> {
  const common: Cond[] = [];
  // Every status is no filter at all.
  const statuses = storedStatuses(f.statuses ?? []);
  if (statuses.length && statuses.length < ATTEMPT_STATUSES.length) common.push(inList('a.status', statuses));
  if (f.topics?.length) common.push(inList('a.topic', f.topics));
  common.push(...timeConds('a.time', f.time));

  // Attempts do not record their destination's type: the destinations of those types stand in for
  // it, as branches when they are few, else as a recheck of each attempt's destination.
  let typed: [string, string][] | undefined;
  if (f.destinationTypes?.length) {
    typed = await typedDestinations(q, f.tenants, f.destinationTypes, f.destinationIds, FANOUT_MAX + 1);
    if (!typed.length) return emptyPage(page);
    if (typed.length > FANOUT_MAX || f.eventIds?.length) {
      common.push(ofTypes(f.destinationTypes));
      typed = undefined;
    }
  }

  let branches: Cond[][] = [[]];
  if (f.eventIds?.length) {
    // (event_id, time, id): an event has few attempts, so the other filters are cheap rechecks.
    common.push(inList('a.event_id', f.eventIds));
    if (f.tenants) common.push(inList('a.tenant_id', f.tenants));
    if (f.destinationIds?.length) common.push(inList('a.destination_id', f.destinationIds));
  } else if (typed || f.destinationIds?.length) {
    // (tenant_id, destination_id, time, id, status): one ordered range per destination.
    const pairs = typed ?? (await destinationPairs(q, f.tenants, f.destinationIds ?? []));
    if (!pairs.length) return emptyPage(page);
    if (pairs.length <= FANOUT_MAX) {
      branches = pairs.map(([t, d]) => [cond('a.tenant_id = ?', t), cond('a.destination_id = ?', d)]);
    } else {
      common.push(inList('a.tenant_id', [...new Set(pairs.map((p) => p[0]))]), inList('a.destination_id', f.destinationIds ?? []));
    }
  } else if (f.tenants) {
    // (tenant_id, time, id, status)
    if (f.tenants.length <= FANOUT_MAX) branches = f.tenants.map((t) => [cond('a.tenant_id = ?', t)]);
    else common.push(inList('a.tenant_id', f.tenants));
  }
  // else: every tenant, (time, id, status).

  const res = await keysetPage<AttemptRow & KeyRow>(
    q.db,
    {
      kind: 'att',
      select: `${ATTEMPT_COLUMNS}, a.time AS k_time, a.id AS k_id, ${keyText('a.time')} AS k_c`,
      from: 'attempts a',
      time: 'a.time',
      id: 'a.id',
      idType: 'uuid',
      common,
      branches,
      // An event's attempts are few: one query over every partition beats three.
      ...(f.eventIds?.length ? {} : { windows: { bounds: f.time ?? {} } }),
    },
    page,
    opts.embed
      ? async (rows) => {
          // An event shown by several attempts of the page counts once per attempt: each embeds it.
          const keys = rows.map((r) => ({ tenant: r.tenant_id, id: r.event_id, received: r.event_received_key }));
          return (await sizedCut(q, keys, opts.embed === 'event.data' ? PAYLOAD_BYTES : METADATA_BYTES)).keep;
        }
      : undefined,
  );
  return { models: res.rows.map((r) => attemptView(stripKeys(r) as AttemptRow)), pagination: res.pagination };
}

/** Up to `max` (tenant, destination) pairs of destinations of `types`, within the tenants and destination ids given. */
async function typedDestinations(
  q: Q,
  tenants: Tenants,
  types: readonly string[],
  destinationIds: readonly string[] | undefined,
  max: number,
): Promise<[string, string][]> {
  const conds = [inList('type', types)];
  if (tenants) conds.push(inList('tenant_id', tenants));
  if (destinationIds?.length) conds.push(inList('id', destinationIds));
  const w = where(conds);
  const rows = await run<{ tenant_id: string; id: string }>(
    q.db,
    `SELECT tenant_id, id FROM destinations ${w.sql} ORDER BY tenant_id, id LIMIT ${max}`,
    w.values,
  );
  return rows.map((r) => [r.tenant_id, r.id]);
}

/** The attempt's destination is of one of `types` (a primary-key probe of destinations). */
function ofTypes(types: readonly string[]): Cond {
  const t = inList('dt.type', types);
  return cond(
    `EXISTS (SELECT 1 FROM destinations dt WHERE dt.tenant_id = a.tenant_id AND dt.id = a.destination_id AND ${t.sql})`,
    ...t.values,
  );
}

/**
 * One attempt by id, within the tenants (and destination) the caller may see; null otherwise,
 * so another tenant's attempt is indistinguishable from a missing one. A UUIDv7 carries its
 * creation time, which narrows the lookup to the partitions around it; ids that are not v7
 * (or whose attempt time is far from it) fall back to every partition.
 */
export async function getAttempt(q: Q, id: string, scope: { tenants: Tenants; destinationId?: string }): Promise<AttemptView | null> {
  if (!UUID.test(id)) return null;
  const conds: Cond[] = [cond('a.id = ?::uuid', id)];
  if (scope.tenants) conds.push(inList('a.tenant_id', scope.tenants));
  if (scope.destinationId !== undefined) conds.push(cond('a.destination_id = ?', scope.destinationId));
  const lookup = async (extra: Cond[]) => {
    const w = where([...conds, ...extra]);
    return (await run<AttemptRow>(q.db, `SELECT ${ATTEMPT_COLUMNS} FROM attempts a ${w.sql} LIMIT 1`, w.values))[0];
  };
  const ms = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  const plausible = id[14] === '7' && ms > Date.UTC(2000, 0, 1) && ms < Date.UTC(2200, 0, 1);
  let row: AttemptRow | undefined;
  if (plausible) {
    row = await lookup([
      cond('a.time >= ?::timestamptz', new Date(ms - 86_400_000).toISOString()),
      cond('a.time < ?::timestamptz', new Date(ms + 86_400_000).toISOString()),
    ]);
  }
  row ??= await lookup([]);
  return row ? attemptView(row) : null;
}

/**
 * Every attempt of one event (newest first, at most EVENT_ATTEMPTS_MAX): its deliveries; null
 * when the event is not visible. Attempts follow their event, so partitions older than a day
 * before the event was received are skipped (the day covers any clock difference between the
 * servers that stamp the two times).
 */
export async function eventAttempts(
  q: Q,
  tenants: Tenants,
  eventId: string,
  destinationIds?: readonly string[],
): Promise<AttemptView[] | null> {
  const event = await findEvent(q, tenants, eventId, false);
  if (!event) return null;
  const conds = [cond('a.event_id = ?', event.id), cond('a.tenant_id = ?', event.tenant_id)];
  if (destinationIds?.length) conds.push(inList('a.destination_id', destinationIds));
  if (event.received_key) conds.push(cond(`a.time >= ?::timestamptz - interval '1 day'`, event.received_key));
  const w = where(conds);
  const rows = await run<AttemptRow>(
    q.db,
    `SELECT ${ATTEMPT_COLUMNS} FROM attempts a ${w.sql} ORDER BY a.time DESC, a.id DESC LIMIT ${EVENT_ATTEMPTS_MAX}`,
    w.values,
  );
  return rows.map(attemptView);
}
