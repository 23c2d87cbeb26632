// Erasing deleted tenants. Deleting a tenant (the gateway's TenantStore.delete) removes it and its destinations at
// once and records an erasure; its events, deliveries, attempts, idempotency keys, spilled ordered
// deliveries, ordered positions and operator events from before the deletion are then deleted here, a bounded batch per statement, so a
// large tenant never holds one long transaction. The gateway starts this right after a deletion; the attempts service runs it
// every minute (it finishes what a gateway that stopped left). A tenant created again under the id
// waits for its erasure to finish (the gateway runs it then) and so starts empty.
//
// Late rows: a delivery already queued when its tenant went gets a `canceled` attempt afterwards, and
// an event routed just before may be stored after the first pass. Rows from before the cutoff are
// therefore erased again on every pass for a day after the erasure finished; past that, retention
// drops them with their partition.
import type { Knex } from 'knex';
import { failureRun, type Logger } from '../log.ts';

/** Rows one statement deletes: a few MB of WAL, milliseconds of locks. */
export const ERASE_BATCH = 5_000;
/** How long finished erasures are run again for late rows. */
const LATE_ROWS_MS = 24 * 3_600_000;

/** Each table: its rows of one tenant from before a time, by primary key. */
const TABLES: Array<{ table: string; key: string; before: string }> = [
  { table: 'events', key: 'tenant_id, id, received_at', before: 'received_at' },
  { table: 'deliveries', key: 'tenant_id, event_id, destination_id, created_at', before: 'created_at' },
  // An attempt is placed by its time, but belongs to the event it delivered.
  { table: 'attempts', key: 'id, time', before: 'coalesce(event_received_at, time)' },
  { table: 'event_ids', key: 'tenant_id, id', before: 'reserved_at' },
  // Deliveries of blocked ordered destinations waiting in their spill, with their events.
  { table: 'ordered_spill', key: 'tenant_id, destination_id, topic, partition, "offset"', before: 'spilled_at' },
  // Where ordered destinations' deliveries ended, with attempts not yet known to be written.
  { table: 'ordered_positions', key: 'tenant_id, destination_id', before: 'ended_at' },
  // Alerts and auto-disables of its destinations, with their last failed attempts.
  { table: 'operator_events', key: 'tenant_id, id', before: 'time' },
];

interface Erasure {
  tenant_id: string;
  cutoff: Date;
  done_at: Date | null;
}

/**
 * Erases one tenant's rows from before `cutoff`, until none is left or `deadline` (ms since the
 * epoch) passes. Returns true when none is left.
 */
export async function eraseTenant(db: Knex, tenantId: string, cutoff: Date, deadline = Number.POSITIVE_INFINITY): Promise<boolean> {
  for (const { table, key, before } of TABLES) {
    for (;;) {
      if (Date.now() > deadline) return false;
      const res = await db.raw(
        `DELETE FROM ${table} WHERE (${key}) IN (SELECT ${key} FROM ${table} WHERE tenant_id = ? AND ${before} < ? LIMIT ${ERASE_BATCH})`,
        [tenantId, cutoff],
      );
      if ((res.rowCount ?? 0) < ERASE_BATCH) break;
    }
  }
  await db('destination_health').where({ tenant_id: tenantId }).delete();
  return true;
}

/** One pass over every erasure that is unfinished or finished within a day; returns the tenants finished now. */
export async function eraseDeletedTenants(db: Knex, only?: string): Promise<string[]> {
  const q = db('tenant_erasures')
    .where((w) => w.whereNull('done_at').orWhere('done_at', '>', new Date(Date.now() - LATE_ROWS_MS)))
    .orderBy('cutoff');
  if (only !== undefined) q.andWhere({ tenant_id: only });
  const erasures = (await q) as Erasure[];
  const finished: string[] = [];
  for (const e of erasures) {
    await eraseTenant(db, e.tenant_id, e.cutoff);
    if (!e.done_at) {
      await db('tenant_erasures').where({ tenant_id: e.tenant_id, cutoff: e.cutoff }).update({ done_at: db.fn.now() });
      finished.push(e.tenant_id);
    }
  }
  await db('tenant_erasures')
    .where('done_at', '<', new Date(Date.now() - LATE_ROWS_MS))
    .delete();
  return finished;
}

/**
 * Finishes the unfinished erasures of `tenantId` within `budgetMs`; true when none is left (a tenant
 * may then be created again under the id and start empty).
 */
export async function finishErasure(db: Knex, tenantId: string, budgetMs: number): Promise<boolean> {
  const pending = (await db('tenant_erasures').where({ tenant_id: tenantId }).whereNull('done_at').orderBy('cutoff')) as Erasure[];
  const deadline = Date.now() + budgetMs;
  for (const e of pending) {
    if (!(await eraseTenant(db, tenantId, e.cutoff, deadline))) return false;
    await db('tenant_erasures').where({ tenant_id: tenantId, cutoff: e.cutoff }).update({ done_at: db.fn.now() });
  }
  return true;
}

/** Runs a pass every `everyMs` and when kicked (a deletion); passes never overlap. */
export function startTenantErasure(db: Knex, opts: { everyMs?: number; log?: Logger } = {}): { kick(): void; stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  let queued = false;
  let stopped = false;
  const run = failureRun(opts.log, 'erasing deleted tenants');
  const pass = () => {
    if (stopped || queued) return;
    queued = true;
    running = running
      .then(() => {
        queued = false;
        return stopped ? [] : eraseDeletedTenants(db);
      })
      .then(
        (finished) => {
          run.worked();
          if (finished.length) opts.log?.info({ tenants: finished }, 'deleted tenants erased');
        },
        (err: unknown) => run.failed(err),
      );
  };
  const timer = opts.everyMs ? setInterval(pass, opts.everyMs) : null;
  timer?.unref();
  if (timer) pass();
  return {
    kick: pass,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
