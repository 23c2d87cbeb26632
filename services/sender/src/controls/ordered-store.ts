/**
 * What ordered delivery (ordered.ts) keeps in Postgres, migrations 013, 014, 015 and 018: a
 * destination's block (`ordered_blocks`: the failed delivery its later ones wait behind, and its next
 * try), its spill (`ordered_spill`: the deliveries that came meanwhile, keyed by their place in the
 * delivery partition, drained in the order they were spilled), the
 * drain's lease (`ordered_drains`), and the position of its last ended delivery
 * (`ordered_positions`, with the attempts not yet known to be written).
 */
import type { Knex } from '@switchyard/shared/db/index.ts';
import { metrics } from '@switchyard/shared/metrics.ts';
import type { AttemptRecord, DeliveryRecord } from '@switchyard/shared/model/index.ts';

/** How long a drain's lease lasts unless renewed (a sender killed mid-drain holds it this long at most). */
export const LEASE_MS = 10_000;

export interface Block {
  event_id: string;
  attempt_number: number;
  next_attempt_at: Date;
}

/** Where a delivery record is: its topic, partition and offset. */
export interface Position {
  topic: string;
  partition: number;
  offset: string;
}

/** The last ordered delivery of a destination that ended: its record, and its event's place in the events topic. */
export interface Ended {
  topic: string;
  partition: number;
  offset: bigint;
  event: { partition: number; offset: bigint } | null;
}

/** A stored position: with the attempts, up to it, that were not known to be written when it was saved. */
export interface Saved extends Ended {
  attempts: AttemptRecord[];
}

/** Where `d`'s event was in the events topic, when it says and that is its place in the order (not a scheduled event's). */
export const eventAt = (d: DeliveryRecord) =>
  d.event_position && !d.event.deliver_at ? { partition: d.event_position.partition, offset: BigInt(d.event_position.offset) } : null;

/** One ordered destination. */
export interface Dest {
  tenant_id: string;
  destination_id: string;
}

export interface Spilled {
  delivery: DeliveryRecord;
  at: Position;
}

/** What ordered delivery keeps in Postgres (migrations 013, 014, 015 and 018). */
export interface OrderedStore {
  /** Whether `d`'s destination has a spill, and what blocks it, if anything. */
  state(d: DeliveryRecord): Promise<{ spilled: boolean; block: Block | null }>;
  /** What blocks the destination of `d` now, if anything was recorded. */
  get(d: DeliveryRecord): Promise<Block | null>;
  /** Records that `d`'s try `attemptNumber` failed and the next is due at `next`. */
  set(d: DeliveryRecord, attemptNumber: number, next: Date): Promise<void>;
  /** `d` no longer blocks its destination. */
  clear(d: DeliveryRecord): Promise<void>;
  /** Nothing blocks the destination unless it has a spill (a block left by a crash goes). */
  unblock(dest: Dest): Promise<void>;
  /** Where the last delivery of `d`'s destination that ended was (its record and its event); null: none known. */
  position(d: DeliveryRecord): Promise<Saved | null>;
  /** Records that the delivery at `at` ended, with `attempts` (its own and earlier ones) not yet known to be written. */
  ended(d: DeliveryRecord, at: Position, attempts: AttemptRecord[]): Promise<void>;
  /** Appends `d` (at `at`) to its destination's spill; false when it was there already. */
  spill(d: DeliveryRecord, at: Position): Promise<boolean>;
  /** Appends `d` and records that its try `attemptNumber` failed (set), in one transaction. */
  spillBlocked(d: DeliveryRecord, at: Position, attemptNumber: number, next: Date): Promise<boolean>;
  /**
   * The first `n` spilled deliveries of the destination, in the order they were spilled: its
   * deliveries are read one at a time, so that is the order its sender read them, also when they
   * came from another partition since `deliveries.<type>` grew (partition order would put a
   * lower-numbered partition's later deliveries first).
   */
  head(dest: Dest, n: number): Promise<Spilled[]>;
  /** Removes the spilled delivery at `at`. */
  drop(dest: Dest, at: Position): Promise<void>;
  /** Takes or renews the lease on draining `dest` for `owner`; false when another holds it. */
  claim(dest: Dest, owner: string): Promise<boolean>;
  release(dest: Dest, owner: string): Promise<void>;
  /** Destinations of `types` with a spill and no live lease on it. */
  orphans(types: string[]): Promise<Dest[]>;
}

export const destOf = (d: DeliveryRecord): Dest => ({ tenant_id: d.destination.tenant_id, destination_id: d.destination.id });

export function createOrderedStore(db: Knex): OrderedStore {
  const where = (d: DeliveryRecord) => destOf(d);
  const blockOf = (row: { event_id: string; attempt_number: number; next_attempt_at: Date | string }): Block => ({
    event_id: row.event_id,
    attempt_number: row.attempt_number,
    next_attempt_at: new Date(row.next_attempt_at),
  });
  const setBlock = (q: Knex, d: DeliveryRecord, attemptNumber: number, next: Date) => {
    const row = { ...where(d), event_id: d.event.id, attempt_number: attemptNumber, next_attempt_at: next };
    // `since` stays while the same event blocks; a new blocking event starts it again.
    return q('ordered_blocks')
      .insert(row)
      .onConflict(['tenant_id', 'destination_id'])
      .merge({
        ...row,
        since: q.raw('CASE WHEN ordered_blocks.event_id = excluded.event_id THEN ordered_blocks.since ELSE now() END'),
        updated_at: q.fn.now(),
      });
  };
  const append = async (q: Knex, d: DeliveryRecord, at: Position) => {
    const row = {
      ...where(d),
      topic: at.topic,
      partition: at.partition,
      offset: at.offset,
      type: d.destination.type,
      event_id: d.event.id,
      delivery: JSON.stringify(d),
    };
    const res = (await q('ordered_spill')
      .insert(row)
      .onConflict(['tenant_id', 'destination_id', 'topic', 'partition', 'offset'])
      .ignore()) as unknown as {
      rowCount?: number;
    };
    const added = (res.rowCount ?? 0) > 0;
    if (added) metrics.orderedSpill.inc({ type: d.destination.type, stage: 'spilled' });
    return added;
  };
  return {
    async state(d) {
      const res = await db.raw(
        `SELECT EXISTS (SELECT 1 FROM ordered_spill WHERE tenant_id = ? AND destination_id = ?) AS spilled,
                b.event_id, b.attempt_number, b.next_attempt_at
           FROM (SELECT 1) one LEFT JOIN ordered_blocks b ON b.tenant_id = ? AND b.destination_id = ?`,
        [d.destination.tenant_id, d.destination.id, d.destination.tenant_id, d.destination.id],
      );
      const row = (res.rows as Array<{ spilled: boolean; event_id: string | null; attempt_number: number; next_attempt_at: Date }>)[0];
      return {
        spilled: row?.spilled === true,
        block: row?.event_id ? blockOf({ ...row, event_id: row.event_id }) : null,
      };
    },
    async get(d) {
      const row = (await db('ordered_blocks').where(where(d)).first('event_id', 'attempt_number', 'next_attempt_at')) as
        | { event_id: string; attempt_number: number; next_attempt_at: Date | string }
        | undefined;
      return row ? blockOf(row) : null;
    },
    async set(d, attemptNumber, next) {
      await setBlock(db, d, attemptNumber, next);
    },
    async clear(d) {
      await db('ordered_blocks')
        .where({ ...where(d), event_id: d.event.id })
        .delete();
    },
    async unblock(dest) {
      await db.raw(
        `DELETE FROM ordered_blocks b WHERE b.tenant_id = ? AND b.destination_id = ?
           AND NOT EXISTS (SELECT 1 FROM ordered_spill s WHERE s.tenant_id = b.tenant_id AND s.destination_id = b.destination_id)`,
        [dest.tenant_id, dest.destination_id],
      );
    },
    async position(d) {
      const row = (await db('ordered_positions')
        .where(where(d))
        .first('topic', 'partition', 'offset', 'event_partition', 'event_offset', 'attempts')) as
        | {
            topic: string;
            partition: number;
            offset: string | number;
            event_partition: number | null;
            event_offset: string | number | null;
            attempts: string | null;
          }
        | undefined;
      if (!row) return null;
      const event =
        row.event_partition !== null && row.event_offset !== null
          ? { partition: row.event_partition, offset: BigInt(row.event_offset) }
          : null;
      const attempts = row.attempts ? (JSON.parse(row.attempts) as AttemptRecord[]) : [];
      return { topic: row.topic, partition: row.partition, offset: BigInt(row.offset), event, attempts };
    },
    async ended(d, at, attempts) {
      const ev = eventAt(d);
      // The event's place only grows within its partition; a delivery without one keeps the last.
      await db.raw(
        `INSERT INTO ordered_positions (tenant_id, destination_id, topic, partition, "offset", event_partition, event_offset, attempts)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (tenant_id, destination_id) DO UPDATE SET
           topic = excluded.topic, partition = excluded.partition, "offset" = excluded."offset",
           attempts = excluded.attempts, ended_at = now(),
           event_partition = coalesce(excluded.event_partition, ordered_positions.event_partition),
           event_offset = CASE
             WHEN excluded.event_offset IS NULL THEN ordered_positions.event_offset
             WHEN ordered_positions.event_partition = excluded.event_partition
               THEN greatest(ordered_positions.event_offset, excluded.event_offset)
             ELSE excluded.event_offset END`,
        [
          d.destination.tenant_id,
          d.destination.id,
          at.topic,
          at.partition,
          at.offset,
          ev?.partition ?? null,
          ev === null ? null : String(ev.offset),
          JSON.stringify(attempts),
        ],
      );
    },
    spill: (d, at) => append(db, d, at),
    spillBlocked(d, at, attemptNumber, next) {
      return db.transaction(async (tx) => {
        const added = await append(tx, d, at);
        await setBlock(tx, d, attemptNumber, next);
        return added;
      });
    },
    async head(dest, n) {
      const rows = (await db('ordered_spill')
        .where(dest)
        .orderBy([{ column: 'spilled_at' }, { column: 'topic' }, { column: 'partition' }, { column: 'offset' }])
        .limit(n)
        .select('topic', 'partition', 'offset', 'delivery')) as Array<{
        topic: string;
        partition: number;
        offset: string | number;
        delivery: string;
      }>;
      return rows.map((r) => ({
        delivery: JSON.parse(r.delivery) as DeliveryRecord,
        at: { topic: r.topic, partition: r.partition, offset: String(r.offset) },
      }));
    },
    async drop(dest, at) {
      await db('ordered_spill')
        .where({ ...dest, topic: at.topic, partition: at.partition, offset: at.offset })
        .delete();
    },
    async claim(dest, owner) {
      const res = await db.raw(
        `INSERT INTO ordered_drains (tenant_id, destination_id, owner, until)
         VALUES (?, ?, ?, now() + make_interval(secs => ?))
         ON CONFLICT (tenant_id, destination_id) DO UPDATE SET owner = excluded.owner, until = excluded.until
           WHERE ordered_drains.until < now() OR ordered_drains.owner = excluded.owner
         RETURNING owner`,
        [dest.tenant_id, dest.destination_id, owner, LEASE_MS / 1000],
      );
      return (res.rows as unknown[]).length === 1;
    },
    async release(dest, owner) {
      await db('ordered_drains')
        .where({ ...dest, owner })
        .delete();
    },
    async orphans(types) {
      if (!types.length) return [];
      return (await db('ordered_spill as s')
        .distinct('s.tenant_id', 's.destination_id')
        .whereIn('s.type', types)
        .whereNotExists((q) =>
          q
            .select(db.raw('1'))
            .from('ordered_drains as d')
            .whereRaw('d.tenant_id = s.tenant_id AND d.destination_id = s.destination_id AND d.until > now()'),
        )
        .limit(100)) as Dest[];
    },
  };
}
