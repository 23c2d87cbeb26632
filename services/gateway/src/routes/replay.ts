// Cancel and replay, for a tenant (admin key or its own token).
// - POST .../destinations/{id}/cancel: every delivery of the destination made so far and not yet
//   attempted (queued, or waiting for a retry) ends as a `canceled` attempt instead of a request
//   (the destination's cancel epoch rises; services/sender/src/destination-state.ts).
// - POST .../replay: the deliveries of the tenant (or one destination) of events received since a
//   time whose status is failed (final: no automatic retry follows), skipped or canceled, are made
//   again: one manual attempt each, through the delivery topics, to the destination as it is now.
//   Bounded (`limit`, at most 1,000 a call) and paged (`next`: pass it as `cursor`).
import { checkedInstant } from '@switchyard/shared/time.ts';
import type { FastifyInstance } from 'fastify';
import type { DestinationStore, RoutableDestination } from '@switchyard/shared/db/stores/destinations.ts';
import { AppError } from '@switchyard/shared/errors.ts';
import type { BusProducer, TopicRecords } from '@switchyard/shared/bus/index.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import type { DeliveryRecord, EventRecord } from '@switchyard/shared/model/index.ts';
import type { Knex } from '@switchyard/shared/db/index.ts';
import type { Announce } from '../destination-changes.ts';
import type { TenantCheck } from './deps.ts';
import { existingTenant, idParam, type TenantReq } from './common.ts';
import { answers, ref } from '../openapi.ts';
import { storedEvent } from '../stored-event.ts';

const REPLAYABLE = ['failed', 'skipped', 'canceled'] as const;
type Replayable = (typeof REPLAYABLE)[number];
export const REPLAY_MAX = 1000;

interface ReplayBody {
  since: string;
  until?: string;
  destination_id?: string;
  status?: Replayable[];
  limit?: number;
  cursor?: string;
}

interface DeliveryRow {
  tenant_id: string;
  event_id: string;
  destination_id: string;
  created_at: Date;
  attempts: number;
}

const replayBody = {
  type: 'object',
  required: ['since'],
  additionalProperties: false,
  properties: {
    since: { type: 'string', format: 'date-time', description: 'Deliveries of events received at or after this time.' },
    until: { type: 'string', format: 'date-time', description: 'And before this time (default: now).' },
    destination_id: { ...idParam, description: 'Only this destination (default: every destination of the tenant).' },
    status: {
      type: 'array',
      items: { type: 'string', enum: [...REPLAYABLE] },
      minItems: 1,
      uniqueItems: true,
      description: 'Which deliveries (default: failed). failed counts only once no automatic retry follows.',
    },
    limit: { type: 'integer', minimum: 1, maximum: REPLAY_MAX, default: 100, description: 'Deliveries replayed by this call.' },
    cursor: { type: 'string', maxLength: 1024, description: 'The `next` of the previous call.' },
  },
} as const;

const replayAnswer = {
  type: 'object',
  properties: {
    replayed: { type: 'integer', description: 'Deliveries sent again by this call.' },
    not_replayed: {
      type: 'integer',
      description: 'Deliveries of this page left alone: their destination is disabled or gone, or their event no longer stored.',
    },
    next: { type: ['string', 'null'], description: 'Cursor of the next page; null when this was the last.' },
  },
} as const;

const destParams = { type: 'object', properties: { tenant_id: idParam, destination_id: idParam } } as const;

const encodeCursor = (r: DeliveryRow) =>
  Buffer.from(JSON.stringify([r.created_at.toISOString(), r.event_id, r.destination_id])).toString('base64url');

const isoTime = (t: string) => {
  const d = new Date(t);
  return !Number.isNaN(d.getTime()) && d.toISOString() === t;
};

function decodeCursor(c: string): [string, string, string] {
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown;
    // As encodeCursor wrote it: a time toISOString gives back unchanged (no day rolled over into the
    // next month, which Postgres would refuse), ids Postgres text can hold (no NUL).
    const ok =
      Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'string' && !x.includes('\u0000')) && isoTime(v[0] as string);
    if (ok) return v as [string, string, string];
  } catch {}
  throw AppError.validation([{ path: 'body.cursor', message: 'is not a cursor this endpoint returned' }]);
}

/** One page of the tenant's replayable deliveries (of `only` when given), after `b.cursor`; `next` when more follow. */
async function replayablePage(db: Knex, tenantId: string, b: ReplayBody, only: RoutableDestination | null) {
  const since = checkedInstant(b.since);
  const until = b.until ? checkedInstant(b.until) : new Date();
  const statuses = b.status ?? ['failed'];
  const limit = b.limit ?? 100;
  const q = db('deliveries as d')
    .where('d.tenant_id', tenantId)
    .whereIn('d.status', statuses)
    .where('d.created_at', '>=', since)
    .where('d.created_at', '<', until)
    // A failed delivery still being retried is not replayed: only once its last attempt was final.
    .where((w) =>
      w
        .whereNot('d.status', 'failed')
        .orWhereExists((e) =>
          e
            .select(db.raw('1'))
            .from('attempts as a')
            .whereRaw('a.event_id = d.event_id AND a.tenant_id = d.tenant_id AND a.destination_id = d.destination_id')
            .whereRaw('a.final AND a.time >= d.last_attempt_at'),
        ),
    )
    .orderBy([{ column: 'd.created_at' }, { column: 'd.event_id' }, { column: 'd.destination_id' }])
    .limit(limit + 1)
    .select(['d.tenant_id', 'd.event_id', 'd.destination_id', 'd.created_at', 'd.attempts']);
  if (only) q.andWhere('d.destination_id', only.id);
  if (b.cursor) {
    const [at, eventId, destinationId] = decodeCursor(b.cursor);
    q.andWhereRaw('(d.created_at, d.event_id, d.destination_id) > (?::timestamptz, ?, ?)', [at, eventId, destinationId]);
  }
  const rows = (await q) as DeliveryRow[];
  const page = rows.slice(0, limit);
  const next = rows.length > limit ? encodeCursor(page.at(-1) as DeliveryRow) : null;
  return { page, next };
}

/** The stored events of a page of deliveries, by id (an event dropped by retention is missing). */
async function pageEvents(db: Knex, tenantId: string, page: DeliveryRow[]): Promise<Map<string, EventRecord>> {
  const events = new Map<string, EventRecord>();
  if (page.length) {
    const keys = [...new Map(page.map((r) => [r.event_id, r])).values()];
    const found = (await db('events')
      .where('tenant_id', tenantId)
      .whereIn(
        ['id', 'received_at'],
        keys.map((r) => [r.event_id, r.created_at]),
      )) as Array<Record<string, unknown>>;
    for (const e of found) events.set(String(e.id), storedEvent(e));
  }
  return events;
}

/** The page's deliveries made again, one manual attempt each, batched by delivery topic. */
function replayBatches(page: DeliveryRow[], events: Map<string, EventRecord>, destinations: Map<string, RoutableDestination | null>) {
  const batches = new Map<string, TopicRecords>();
  let replayed = 0;
  for (const r of page) {
    const d = destinations.get(r.destination_id);
    const event = events.get(r.event_id);
    if (!d || d.disabled_at || !event) continue;
    const delivery: DeliveryRecord = { event, destination: d.snapshot, attempt_number: r.attempts + 1, manual: true };
    const topic = TOPIC.deliveries[d.snapshot.type];
    let batch = batches.get(topic.name);
    if (!batch) {
      batch = { topic, records: [] };
      batches.set(topic.name, batch);
    }
    batch.records.push({ key: d.id, value: delivery });
    replayed++;
  }
  return { batches, replayed };
}

export interface ReplayRouteDeps {
  tenants: TenantCheck;
  destinations: Pick<DestinationStore, 'routable' | 'cancelPending'>;
  /** Reads the deliveries to replay. */
  db: Knex;
  producer: BusProducer;
  announce: Announce;
}

export function replayRoutes(deps: ReplayRouteDeps) {
  return async (app: FastifyInstance) => {
    app.post(
      '/destinations/:destination_id/cancel',
      {
        schema: {
          tags: ['destinations'],
          summary: 'Cancel every delivery of the destination not yet attempted (queued or waiting for a retry)',
          description:
            'Each ends as one final attempt with status canceled (response_data.reason "canceled") when its turn comes, instead of a request. Deliveries made after this call (new events, replays, manual retries) go out as usual.',
          params: destParams,
          response: answers({ 202: 'Success' }),
        },
      },
      async (req: TenantReq, reply) => {
        const tenantId = await existingTenant(deps.tenants, req);
        const destinationId = req.params.destination_id ?? '';
        const epoch = await deps.destinations.cancelPending(tenantId, destinationId);
        if (epoch === null) throw new AppError('DESTINATION_NOT_FOUND');
        await deps.announce({ tenant_id: tenantId, destination_id: destinationId, change: 'updated' });
        reply.status(202);
        return { success: true };
      },
    );

    app.post<{ Body: ReplayBody }>(
      '/replay',
      {
        schema: {
          tags: ['attempts'],
          summary: 'Replay failed, skipped or canceled deliveries of the tenant or one destination since a time; 202',
          description:
            'One manual attempt per delivery, to the destination as it is now, in the order the events were received. At most `limit` a call; continue with `next` as `cursor`.',
          body: ref('ReplayRequest'),
          response: answers({ 202: 'ReplayResult' }),
        },
      },
      async (req, reply) => {
        const tenantId = await existingTenant(deps.tenants, req as unknown as TenantReq);
        const b = req.body;
        let only: RoutableDestination | null = null;
        if (b.destination_id !== undefined) {
          only = await deps.destinations.routable(tenantId, b.destination_id);
          if (!only) throw new AppError('DESTINATION_NOT_FOUND');
          if (only.disabled_at) throw new AppError('DESTINATION_DISABLED', 'The destination is disabled; enable it before replaying.');
        }
        const { page, next } = await replayablePage(deps.db, tenantId, b, only);
        const events = await pageEvents(deps.db, tenantId, page);
        const destinations = new Map<string, RoutableDestination | null>(only ? [[only.id, only]] : []);
        for (const id of new Set(page.map((r) => r.destination_id)))
          if (!destinations.has(id)) destinations.set(id, await deps.destinations.routable(tenantId, id));

        const { batches, replayed } = replayBatches(page, events, destinations);
        if (batches.size) await deps.producer.sendMany([...batches.values()]);
        reply.status(202);
        return { replayed, not_replayed: page.length - replayed, next };
      },
    );
  };
}

/** The named models of these routes (components of the OpenAPI document, registered in app.ts). */
export const REPLAY_MODELS = { ReplayRequest: replayBody, ReplayResult: replayAnswer } as const;
