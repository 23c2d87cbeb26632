import type { Knex } from 'knex';
import { failureRun, type RunLog } from '../log.ts';

/**
 * Time partitions of the tables that grow without bound. Each is range-partitioned by server time
 * (never by the caller-supplied event time), in partitions of `intervalDays` days aligned to UTC
 * midnight, plus a DEFAULT partition that catches anything outside every range so an insert never
 * fails. `ensurePartitions` creates partitions ahead of time; `dropExpiredPartitions` enforces
 * retention by dropping whole partitions (no DELETE, no vacuum debt). docs/queries.md documents both.
 *
 * Every change runs in its own short transaction, under one advisory lock (several processes may
 * run maintenance at once) and a lock timeout (a DDL lock queued behind a long query would stall
 * every query behind it; on timeout the step is skipped and the next run tries again).
 */
export const PARTITIONED_TABLES = [
  { table: 'events', column: 'received_at' },
  { table: 'deliveries', column: 'created_at' },
  { table: 'attempts', column: 'time' },
] as const;

export type PartitionedTable = (typeof PARTITIONED_TABLES)[number]['table'];

/**
 * Tables kept by time that are not partitioned (small: counts at minute or hour grain, operator
 * events): retention deletes their rows older than the cutoff, in the same pass.
 */
export const EXPIRING_TABLES = [
  { table: 'attempt_counts_minute', column: 'minute' },
  { table: 'attempt_counts_hour', column: 'hour' },
  { table: 'event_counts', column: 'minute' },
  { table: 'operator_events', column: 'time' },
] as const;

const DAY_MS = 86_400_000;
/** Advisory lock key of partition maintenance ("swyd-prt"). */
const LOCK_KEY = 0x73777964_70727400n;
const LOCK_TIMEOUT = '3s';

export interface PartitionOptions {
  /** Days per partition (default 1). Changing it later is safe: new ranges start where old ones end. */
  intervalDays?: number;
  /** Partitions exist up to at least now + aheadDays (default 7). */
  aheadDays?: number;
  /** Partitions exist from at least now - behindDays (default 0: from the current interval). */
  behindDays?: number;
}

export interface PartitionRange {
  name: string;
  /** Inclusive lower bound, ms since epoch. */
  from: number;
  /** Exclusive upper bound, ms since epoch. */
  to: number;
}

/** The range partitions of a table, oldest first (the DEFAULT partition is not listed). */
export async function listPartitions(db: Knex, table: PartitionedTable): Promise<PartitionRange[]> {
  // The bound expression prints timestamps in the session's DateStyle and TimeZone; casting them
  // back in the same session reads them exactly.
  const res = await db.raw(
    `SELECT c.relname AS name, b[1]::timestamptz AS lo, b[2]::timestamptz AS hi
       FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid
       CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']*)''\\) TO \\(''([^'']*)''\\)') AS b
      WHERE i.inhparent = ?::regclass AND b IS NOT NULL
      ORDER BY lo`,
    [table],
  );
  return (res.rows as { name: string; lo: Date; hi: Date }[]).map((r) => ({ name: r.name, from: r.lo.getTime(), to: r.hi.getTime() }));
}

const pad = (n: number) => String(n).padStart(2, '0');
function partitionName(table: string, from: number): string {
  const d = new Date(from);
  const day = `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}`;
  const time = d.getUTCHours() || d.getUTCMinutes() ? `_${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}` : '';
  return `${table}_p${day}${time}`;
}

/** [from, to) minus the existing ranges, as the free pieces left. */
function freePieces(from: number, to: number, taken: PartitionRange[]): [number, number][] {
  let pieces: [number, number][] = [[from, to]];
  for (const r of taken) {
    pieces = pieces.flatMap(([a, b]): [number, number][] => {
      if (r.to <= a || r.from >= b) return [[a, b]];
      const out: [number, number][] = [];
      if (r.from > a) out.push([a, r.from]);
      if (r.to < b) out.push([r.to, b]);
      return out;
    });
  }
  return pieces;
}

async function underLock<T>(db: Knex, fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (trx) => {
    await trx.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    await trx.raw('SELECT pg_advisory_xact_lock(?::bigint)', [LOCK_KEY.toString()]);
    return fn(trx);
  });
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Creates one partition for [from, to). The table is built detached and then attached, which
 * locks the parent only in SHARE UPDATE EXCLUSIVE mode (reads and writes go on); rows of the range
 * that landed in the DEFAULT partition meanwhile are moved into it first.
 */
async function createPartition(trx: Knex.Transaction, table: string, column: string, from: number, to: number): Promise<string> {
  const name = partitionName(table, from);
  const def = `${table}_default`;
  // INCLUDING STATISTICS copies the parent's extended statistics (tenant -> destination dependency).
  await trx.raw(`CREATE TABLE ?? (LIKE ?? INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STATISTICS)`, [name, table]);
  // The default partition must hold no row of the new range when it is attached; locking it first
  // keeps inserts of that range from landing there between the move and the attach.
  await trx.raw(`LOCK TABLE ?? IN ACCESS EXCLUSIVE MODE`, [def]);
  await trx.raw(
    `WITH moved AS (DELETE FROM ?? WHERE ?? >= ?::timestamptz AND ?? < ?::timestamptz RETURNING *) INSERT INTO ?? SELECT * FROM moved`,
    [def, column, iso(from), column, iso(to), name],
  );
  // DDL takes no bind parameters; the bounds are ISO strings made here from numbers.
  await trx.raw(`ALTER TABLE ?? ATTACH PARTITION ?? FOR VALUES FROM ('${iso(from)}') TO ('${iso(to)}')`, [table, name]);
  return name;
}

/**
 * Makes sure every table has partitions covering [now - behindDays, now + aheadDays] (from UTC
 * midnight), on a grid of `intervalDays`-day ranges from the Unix epoch. Existing partitions are
 * kept as they are; only the gaps are filled. Returns the partitions created.
 */
export async function ensurePartitions(db: Knex, now: Date = new Date(), opts: PartitionOptions = {}): Promise<string[]> {
  const interval = Math.max(1, Math.floor(opts.intervalDays ?? 1)) * DAY_MS;
  // From midnight of the first day to cover; the interval grid may start earlier, which is clipped.
  const from = Math.floor((now.getTime() - (opts.behindDays ?? 0) * DAY_MS) / DAY_MS) * DAY_MS;
  const start = Math.floor(from / interval) * interval;
  const end = Math.ceil((now.getTime() + (opts.aheadDays ?? 7) * DAY_MS) / interval) * interval;
  const created: string[] = [];
  for (const { table, column } of PARTITIONED_TABLES) {
    for (let a = start; a < end; a += interval) {
      // Listed again under the lock each time: another process may have created it meanwhile.
      const made = await underLock(db, async (trx) => {
        const names: string[] = [];
        for (const [lo, hi] of freePieces(Math.max(a, from), a + interval, await listPartitions(trx, table))) {
          names.push(await createPartition(trx, table, column, lo, hi));
        }
        return names;
      });
      created.push(...made);
    }
  }
  return created;
}

/**
 * Retention: drops every partition whose whole range is older than `retentionDays` before `now`
 * (so rows live between retentionDays and retentionDays + intervalDays), and deletes rows that
 * old from the DEFAULT partitions and from EXPIRING_TABLES (counts, operator events). `retentionDays` 0 keeps everything. Returns the partitions dropped.
 */
export async function dropExpiredPartitions(db: Knex, now: Date, retentionDays: number): Promise<string[]> {
  if (!(retentionDays > 0)) return [];
  const cutoff = now.getTime() - retentionDays * DAY_MS;
  const dropped: string[] = [];
  for (const { table, column } of PARTITIONED_TABLES) {
    for (const p of await listPartitions(db, table)) {
      if (p.to > cutoff) continue;
      await underLock(db, async (trx) => {
        // Detaching first keeps the parent's exclusive lock to a catalogue update; the drop then
        // only touches the detached table.
        const still = (await listPartitions(trx, table)).some((x) => x.name === p.name);
        if (!still) return;
        await trx.raw('ALTER TABLE ?? DETACH PARTITION ??', [table, p.name]);
        await trx.raw('DROP TABLE ??', [p.name]);
        dropped.push(p.name);
      });
    }
    await underLock(db, (trx) => trx.raw('DELETE FROM ?? WHERE ?? < ?::timestamptz', [`${table}_default`, column, iso(cutoff)]));
  }
  for (const { table, column } of EXPIRING_TABLES) {
    await db.raw('DELETE FROM ?? WHERE ?? < ?::timestamptz', [table, column, iso(cutoff)]);
  }
  return dropped;
}

export interface MaintenanceOptions extends PartitionOptions {
  retentionDays: number;
  /** How often to run (default hourly). */
  everyMs?: number;
  log?: RunLog;
  now?: () => Date;
}

/** One maintenance pass: create ahead, then drop what expired. */
export async function maintainPartitions(db: Knex, opts: MaintenanceOptions): Promise<{ created: string[]; dropped: string[] }> {
  const now = opts.now?.() ?? new Date();
  const created = await ensurePartitions(db, now, opts);
  const dropped = await dropExpiredPartitions(db, now, opts.retentionDays);
  return { created, dropped };
}

/**
 * Runs maintainPartitions now and then every `everyMs`, until stopped. A failed pass (a lock
 * timeout, the database briefly away) is logged and retried on the next tick.
 */
export function startPartitionMaintenance(db: Knex, opts: MaintenanceOptions): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const run = failureRun(opts.log, 'partition maintenance');
  const pass = () => {
    if (stopped) return;
    running = running
      .then(() => maintainPartitions(db, opts))
      .then(
        ({ created, dropped }) => {
          run.worked();
          if (created.length || dropped.length) opts.log?.info({ created, dropped }, 'partition maintenance');
        },
        (err: unknown) => run.failed(err),
      );
  };
  pass();
  const timer = setInterval(pass, opts.everyMs ?? 3_600_000);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
