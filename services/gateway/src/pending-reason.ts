// Why deliveries to a destination are pending when no sender of its type runs: the router writes
// deliveries of every type, and those of a type no sender consumes wait in their deliveries.<type>
// topic. Each sender marks its types in sender_presence every 30 s (services/sender/src/service.ts);
// a type not marked for 90 s counts as not running. The listings scoped to one destination then say
// so beside the `pending` status rather than leaving it silent.
import type { Knex } from '@switchyard/shared/db/index.ts';
import { SenderPresenceStore } from '@switchyard/shared/db/stores/sender-presence.ts';

/** A type not marked for this long has no sender running (three marks missed). */
export const SENDER_PRESENCE_STALE_MS = 90_000;
/** How long the gateway trusts what it read of the presence table. */
const CACHE_MS = 5_000;

export interface PendingReason {
  code: 'NO_SENDER';
  message: string;
}

/**
 * The destination types a sender runs for now: marked within SENDER_PRESENCE_STALE_MS, read at most
 * every CACHE_MS. Also what the admission bound counts (admission.ts). Throws when the table cannot be read.
 */
export function createSenderPresence(db: Knex): () => Promise<ReadonlySet<string>> {
  const presence = new SenderPresenceStore(db);
  let cached: { at: number; running: Set<string> } | null = null;
  return async () => {
    if (cached && Date.now() - cached.at < CACHE_MS) return cached.running;
    const seen = await presence.seenSince(new Date(Date.now() - SENDER_PRESENCE_STALE_MS));
    cached = { at: Date.now(), running: seen };
    return cached.running;
  };
}

export function createPendingReasons(db: Knex) {
  const running = createSenderPresence(db);
  /** Adds `pending_reason` to the pending items when no sender of the destination's `type` runs. */
  return async function annotate<T extends { status?: string }>(typeOf: () => Promise<string | undefined>, items: T[]): Promise<T[]> {
    if (!items.some((e) => e.status === 'pending')) return items;
    const type = await typeOf();
    if (!type || (await running()).has(type)) return items;
    const reason: PendingReason = {
      code: 'NO_SENDER',
      message: `No sender for ${type} destinations is running: the delivery waits in the deliveries.${type} topic and goes out once one runs (SENDER_TYPES), if that is within the topic's retention (7 days by default).`,
    };
    return items.map((e) => (e.status === 'pending' ? { ...e, pending_reason: reason } : e));
  };
}
