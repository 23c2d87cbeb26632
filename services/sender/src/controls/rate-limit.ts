/**
 * Rate limits per destination (`rate_limit`: per second and/or per minute), enforced where the
 * deliveries are made. Every delivery of one destination is keyed by its id, so it lands in one
 * partition of its type's delivery topic, which one sender process of the group consumes at a time:
 * a limiter local to that process holds the limit for the whole group (docs/delivery-controls.md, "Rate
 * limits", for the rebalance hand-off).
 *
 * Deliveries start evenly spaced, `gapOf` apart: the stricter of the two limits, stretched by
 * SLACK_MS a window, so that arrivals at the receiver stay within the limit over any one-second (or
 * one-minute) window while the deliveries' latency varies by less than SLACK_MS. Spacing is measured
 * on the clock when a delivery really starts, so a pause of this process delays deliveries but never
 * bunches them.
 *
 * A delivery whose turn is at most HOLD_MS away waits for it here (holding one of its destination's
 * slots, never more than DESTINATION_CONCURRENCY); a later one is parked in the retry tiers until about
 * its turn (not an attempt): its destination's backlog then holds no slot of the partition, so other
 * destinations and tenants are not slowed. Parked deliveries are given turns one gap apart, so they
 * come back about at the rate they can go.
 */
import { metrics } from '@switchyard/shared/metrics.ts';
import type { DeliveryRecord, RateLimit } from '@switchyard/shared/model/index.ts';
import type { CurrentState } from '../destination-state.ts';

/** How much latency variation the spacing absorbs per window (the documented tolerance). */
export const SLACK_MS = 100;
/** The longest a delivery waits for its turn in memory; one due later is parked. */
export const HOLD_MS = 500;

/** Milliseconds between the starts of two deliveries under `limit`; 0 without one. */
export function gapOf(limit: RateLimit | undefined | null): number {
  if (!limit) return 0;
  const perSecond = limit.per_second ? (1000 + SLACK_MS) / limit.per_second : 0;
  const perMinute = limit.per_minute ? (60_000 + SLACK_MS) / limit.per_minute : 0;
  return Math.max(perSecond, perMinute);
}

interface KeyState {
  gap: number;
  /** When the last delivery really started (performance.now()). */
  lastStart: number;
  /** The turn the next delivery waiting in memory gets. */
  next: number;
  /** The turn the next parked delivery gets. */
  parkNext: number;
  /** Deliveries waiting in memory for their turn now. */
  waiting: number;
}

export type Admission = { go: Promise<void> } | { parkMs: number };

export interface RateLimiterOptions {
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  holdMs?: number;
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class RateLimiter {
  private readonly keys = new Map<string, KeyState>();
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly holdMs: number;

  constructor(o: RateLimiterOptions = {}) {
    this.now = o.now ?? (() => performance.now());
    this.sleep = o.sleep ?? sleepFor;
    this.holdMs = o.holdMs ?? HOLD_MS;
  }

  /**
   * A delivery of destination `key` under `limit`: `go` resolves when it may start (at once without
   * a limit), or `parkMs` says how long to park it for, when its turn is more than HOLD_MS away.
   * `hold`: never parked, whenever its turn (an ordered destination's: parking would reorder it).
   */
  admit(key: string, limit: RateLimit | undefined | null, hold = false): Admission | null {
    const gap = gapOf(limit);
    if (!gap) {
      this.keys.delete(key);
      return null;
    }
    const now = this.now();
    let s = this.keys.get(key);
    if (!s) {
      s = { gap, lastStart: Number.NEGATIVE_INFINITY, next: now, parkNext: now, waiting: 0 };
      this.keys.set(key, s);
    }
    // A changed limit applies from the next turn on.
    s.gap = gap;
    const turn = Math.max(now, s.next, s.lastStart + gap);
    if (!hold && turn - now > this.holdMs) {
      const parkedTurn = Math.max(turn, s.parkNext);
      s.parkNext = parkedTurn + gap;
      return { parkMs: Math.ceil(parkedTurn - now) };
    }
    s.next = turn + gap;
    s.waiting++;
    return { go: this.waitTurn(s, turn) };
  }

  private async waitTurn(s: KeyState, turn: number): Promise<void> {
    try {
      let wait = turn - this.now();
      // Timers due together after a pause fire together: each start is checked against the last real one.
      for (;;) {
        if (wait > 0) await this.sleep(wait);
        wait = s.lastStart + s.gap - this.now();
        if (wait <= 0) break;
      }
      s.lastStart = this.now();
    } finally {
      s.waiting--;
    }
  }

  /** True while `key` has a limit here. */
  knows(key: string): boolean {
    return this.keys.has(key);
  }

  /** Deliveries waiting in memory for their turn now, across destinations (a gauge). */
  waiting(): number {
    let n = 0;
    for (const s of this.keys.values()) n += s.waiting;
    return n;
  }

  /** Forgets destinations idle for `idleMs` (their next delivery starts at once). */
  sweep(idleMs: number): void {
    const now = this.now();
    for (const [key, s] of this.keys) {
      if (!s.waiting && now - Math.max(s.lastStart, s.parkNext - s.gap) > idleMs) this.keys.delete(key);
    }
  }
}

export interface RateGateDeps {
  /** The destination as it is now (destination-state.ts): its current limit applies. */
  current(snapshot: DeliveryRecord['destination']): CurrentState | Promise<CurrentState>;
  /** Parks a delivery, unchanged but for its due time, in the retry tiers until `dueAt` (not an attempt). */
  park(delivery: DeliveryRecord, dueAt: Date, headers?: Record<string, string>): Promise<void>;
  limiter?: RateLimiter;
}

/**
 * The sender's hook before a delivery: resolves false once the delivery may be made (at once for a
 * destination without a limit), or true once it was parked for later instead (then nothing else
 * is done with the record). A deleted or disabled destination passes: the handler records it canceled.
 */
export type RateGate = ReturnType<typeof createRateGate>;

export function createRateGate(deps: RateGateDeps) {
  const limiter = deps.limiter ?? new RateLimiter();
  const sweep = setInterval(() => limiter.sweep(120_000), 60_000);
  sweep.unref();
  return {
    limiter,
    async parked(delivery: DeliveryRecord, headers?: Record<string, string>): Promise<boolean> {
      const limit = delivery.destination.rate_limit;
      // A destination that never had a limit costs nothing here; one set since is seen at its next change.
      const state = limit || limiter.knows(keyOf(delivery)) ? await deps.current(delivery.destination) : null;
      // An ordered destination's delivery waits for its turn here however long: parked, it would lose its place.
      const admission = limiter.admit(
        keyOf(delivery),
        state && 'destination' in state ? state.destination.rate_limit : undefined,
        delivery.destination.ordered === true,
      );
      if (!admission) return false;
      const type = delivery.destination.type;
      if ('go' in admission) {
        await admission.go;
        metrics.rateLimited.inc({ type, outcome: 'waited' });
        return false;
      }
      await deps.park(delivery, new Date(Date.now() + admission.parkMs), headers);
      metrics.rateLimited.inc({ type, outcome: 'parked' });
      return true;
    },
    close(): void {
      clearInterval(sweep);
    },
  };
}

const keyOf = (d: DeliveryRecord) => `${d.destination.tenant_id}\u0000${d.destination.id}`;
