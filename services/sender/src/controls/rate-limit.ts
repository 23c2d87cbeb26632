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
 * Each delivery gets the next turn of its destination, one gap after the last one given. One whose
 * turn is at most HOLD_MS away waits for it here (holding one of its destination's slots, never more
 * than DESTINATION_CONCURRENCY); a later one is parked in the retry tiers until its turn (not an
 * attempt), and keeps that turn: it comes back carrying it (`turn_at`; the retry scheduler releases
 * such a delivery just before it is due, not a tier hop later) and starts then, rather than queueing behind the
 * deliveries that arrived since. So a backlog drains at the limit, its deliveries in the order they
 * came, and holds no slot of the partition while it waits: other destinations and tenants are not
 * slowed. A turn sooner than MIN_PARK_MS is not given to a parked delivery: the shortest tier would
 * bring it back late, into the turns of others.
 *
 * An ordered destination's delivery is never parked (it would lose its place). One whose turn is at
 * most HOLD_MS away waits for it here; a later one takes no turn here and goes to its destination's
 * spill instead (controls/ordered.ts), whose drain waits for its turn off the partition: the records
 * queued behind it for its key would otherwise take the partition's slots, which other destinations
 * need, for as long as the turns ahead of them last.
 *
 * A limit lowered while deliveries are parked stretches the turns given before it (a `Stretch`, from
 * the moment it was seen): a parked delivery back for its turn is mapped to its place at the new
 * spacing and parked again until then, keeping the turn it was given (the mapping is of that one),
 * and new deliveries take turns after the stretched backlog, so it still drains in the order it came.
 * A limit raised gives no earlier turns to deliveries already parked (they cannot be called back
 * sooner): the backlog drains at the old spacing, new deliveries after it.
 */
import { setTimeout } from 'node:timers/promises';
import { metrics } from '@switchyard/shared/metrics.ts';
import type { DeliveryRecord, RateLimit } from '@switchyard/shared/model/index.ts';
import type { CurrentState } from '../destination-state.ts';

/** How much latency variation the spacing absorbs per window (the documented tolerance). */
export const SLACK_MS = 100;
/** The longest a delivery waits for its turn in memory; one due later is parked. */
export const HOLD_MS = 500;
/**
 * The soonest turn a parked delivery is given: the shortest retry tier (1 s) plus its release slack
 * (0.1 s) and fetch wait (up to 0.2 s), so it is back in time for it.
 */
export const MIN_PARK_MS = 1200;
/**
 * How long before its turn a parked delivery is released from the retry tiers, to wait the rest
 * here: its way back through the delivery topic (behind the records of its partition, its key's
 * queue) takes time, and a delivery back late leaves its turn unused.
 */
export const TURN_LEAD_MS = 300;

/** Milliseconds between the starts of two deliveries under `limit`; 0 without one. */
export function gapOf(limit: RateLimit | undefined | null): number {
  if (!limit) return 0;
  const perSecond = limit.per_second ? (1000 + SLACK_MS) / limit.per_second : 0;
  const perMinute = limit.per_minute ? (60_000 + SLACK_MS) / limit.per_minute : 0;
  return Math.max(perSecond, perMinute);
}

/** How close two starts may come when making up late ones: CATCH_UP of a gap. */
export const CATCH_UP = 0.75;

/**
 * How close two starts may be under `limit`, and the window rule that bounds them: a start late
 * (a timer fired late, the process paused) is made up by the next ones, CATCH_UP of a gap apart,
 * as long as no (1000 + SLACK_MS) ms hold more than `per_second` starts, and never closer than the
 * per-minute gap. Where the per-minute limit is the stricter, starts are a gap apart, as turns are.
 */
function spacingOf(limit: RateLimit, gap: number): { minGap: number; window: number } {
  const perMinuteGap = limit.per_minute ? (60_000 + SLACK_MS) / limit.per_minute : 0;
  if (!limit.per_second || perMinuteGap >= gap) return { minGap: gap, window: 0 };
  return { minGap: Math.max(gap * CATCH_UP, perMinuteGap), window: limit.per_second };
}

interface KeyState {
  gap: number;
  minGap: number;
  /** The real starts of the last `window` deliveries (performance.now()), a ring; empty when starts are a gap apart. */
  starts: Float64Array;
  head: number;
  /** When the last delivery really started (performance.now()). */
  lastStart: number;
  /** The turn the next delivery gets (after every turn given, parked ones included). */
  next: number;
  /** The turns of the deliveries waiting in memory now. */
  turns: number[];
  /** Limits lowered while turns were given ahead, oldest first. */
  stretches: Stretch[];
}

/** A limit lowered at `at`: a turn given before it, between `at` and `until` (the next turn then), is `ratio` as far from `at`. */
interface Stretch {
  at: number;
  until: number;
  ratio: number;
}

/** How long a stretch is kept after the last turn it moved: parked deliveries back later than that take a new turn anyway. */
const STRETCH_KEPT_MS = 60_000;

/** `turn` where the limits lowered since it was given put it. */
function stretched(s: KeyState, turn: number): number {
  let t = turn;
  for (const x of s.stretches) if (t > x.at && t < x.until) t = x.at + (t - x.at) * x.ratio;
  return t;
}

/**
 * Go once `go` resolves (to true when it had to wait for its turn); or park until `parkMs` from now,
 * its turn then. `turnKept`: a parked delivery back early, parked again; it keeps the turn it carries
 * (which a stretch maps to `parkMs`).
 */
export type Admission = { go: Promise<boolean> } | { parkMs: number; turnKept?: true };

/** A delivery whose turn is more than the hold away, given no turn: it is to wait elsewhere and ask again. */
export interface Later {
  laterMs: number;
}

export interface RateLimiterOptions {
  now?: () => number;
  /** Waits `ms`; rejects once `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  holdMs?: number;
  minParkMs?: number;
}

const sleepFor = (ms: number, signal?: AbortSignal) => setTimeout(ms, undefined, signal ? { signal } : undefined);

/** How a delivery beyond the hold is admitted: parked, waited for however long, or left to wait elsewhere. */
type Mode = 'park' | 'hold' | 'near';

export class RateLimiter {
  private readonly keys = new Map<string, KeyState>();
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly holdMs: number;
  private readonly minParkMs: number;

  constructor(o: RateLimiterOptions = {}) {
    this.now = o.now ?? (() => performance.now());
    this.sleep = o.sleep ?? sleepFor;
    this.holdMs = o.holdMs ?? HOLD_MS;
    this.minParkMs = Math.max(o.minParkMs ?? MIN_PARK_MS, this.holdMs);
  }

  /**
   * A delivery of destination `key` under `limit`: `go` resolves when it may start (at once without
   * a limit), or `parkMs` says how long to park it for, when its turn is more than HOLD_MS away.
   * `hold`: never parked, whenever its turn (an ordered destination's drain: it waits off the
   * partition); `signal` ends the wait (`go` rejects, the turn is given up).
   * `turnInMs`: a parked delivery back for the turn it was given (ms from now; negative when late):
   * it starts then, or as soon after as the spacing allows; one back early is parked again until
   * then, and one so late that others fill the hold takes the next turn, as a new one would.
   */
  admit(key: string, limit: RateLimit | undefined | null, hold = false, turnInMs?: number, signal?: AbortSignal): Admission | null {
    return this.take(key, limit, hold ? 'hold' : 'park', turnInMs, signal) as Admission | null;
  }

  /**
   * An ordered destination's delivery from its partition, which is never parked: `go` as `admit`
   * when its turn is at most HOLD_MS away; else `laterMs` (how far its turn is) and no turn taken: it
   * waits elsewhere (its destination's spill) and asks again from there, with `admit` and `hold`.
   */
  near(key: string, limit: RateLimit | undefined | null, turnInMs?: number): { go: Promise<boolean> } | Later | null {
    return this.take(key, limit, 'near', turnInMs) as { go: Promise<boolean> } | Later | null;
  }

  private take(
    key: string,
    limit: RateLimit | undefined | null,
    mode: Mode,
    turnInMs?: number,
    signal?: AbortSignal,
  ): Admission | Later | null {
    const gap = gapOf(limit);
    if (!limit || !gap) {
      this.keys.delete(key);
      return null;
    }
    const now = this.now();
    const { minGap, window } = spacingOf(limit, gap);
    let s = this.keys.get(key);
    if (s?.stretches.length) s.stretches = s.stretches.filter((x) => x.at + (x.until - x.at) * x.ratio + STRETCH_KEPT_MS > now);
    // Lowered with turns given ahead: those turns stretch to the new spacing (see above).
    if (s && gap > s.gap && s.next > now) {
      s.stretches.push({ at: now, until: s.next, ratio: gap / s.gap });
      s.next = now + (s.next - now) * (gap / s.gap);
    }
    // A changed limit applies from the next turn on (the start history kept while its window is the same).
    if (!s || s.starts.length !== window) {
      s = {
        gap,
        minGap,
        starts: new Float64Array(window).fill(Number.NEGATIVE_INFINITY),
        head: 0,
        lastStart: s?.lastStart ?? Number.NEGATIVE_INFINITY,
        next: s?.next ?? now,
        turns: s?.turns ?? [],
        stretches: s?.stretches ?? [],
      };
      this.keys.set(key, s);
    }
    s.gap = gap;
    s.minGap = minGap;
    if (turnInMs !== undefined && Number.isFinite(turnInMs)) {
      turnInMs = stretched(s, now + turnInMs) - now;
      if (mode === 'park' && turnInMs > this.holdMs) return { parkMs: Math.ceil(turnInMs), turnKept: true };
      // Back late: after every delivery waiting here (their turns are due too, or about to be).
      const turn = this.soonest(s, now + Math.max(0, turnInMs), turnInMs > 0 ? now + turnInMs : Number.POSITIVE_INFINITY);
      if (mode === 'hold' || turn - now <= this.holdMs) return this.wait(s, turn, signal);
    }
    const turn = this.soonest(s, Math.max(now, s.next));
    if (mode !== 'hold' && turn - now > this.holdMs) {
      if (mode === 'near') return { laterMs: Math.ceil(turn - now) };
      s.next = Math.max(turn, now + this.minParkMs) + gap;
      // Not ceil((now + min) - now): the sum can round a hair above min, parking a millisecond past it.
      return { parkMs: Math.max(Math.ceil(turn - now), this.minParkMs) };
    }
    return this.wait(s, turn, signal);
  }

  /**
   * When a delivery given turn `turn` can start: after the last real start and those waiting with
   * turns up to `after` (its own, unless told), a gap apart.
   */
  private soonest(s: KeyState, turn: number, after = turn): number {
    let at = s.lastStart;
    for (const w of s.turns) if (w <= after) at = Math.max(w, at + s.gap);
    return Math.max(turn, at + s.gap);
  }

  private wait(s: KeyState, turn: number, signal?: AbortSignal): { go: Promise<boolean> } {
    s.next = Math.max(s.next, turn + s.gap);
    s.turns.push(turn);
    s.turns.sort((a, b) => a - b);
    return { go: this.waitTurn(s, turn, signal) };
  }

  /** The soonest the next delivery may start, by the real starts before it. */
  private allowedAt(s: KeyState): number {
    const spaced = s.lastStart + s.minGap;
    // The oldest of the last `window` starts: the window rule.
    return s.starts.length ? Math.max(spaced, (s.starts[s.head] as number) + 1000 + SLACK_MS) : spaced;
  }

  /** Resolves once the delivery may start: true when it had to wait. Rejects, starting nothing, once `signal` aborts. */
  private async waitTurn(s: KeyState, turn: number, signal?: AbortSignal): Promise<boolean> {
    try {
      let waited = false;
      let wait = turn - this.now();
      // Timers due together after a pause fire together: each start is checked against the real ones before it.
      for (;;) {
        signal?.throwIfAborted();
        if (wait > 0) {
          waited = true;
          await this.sleep(wait, signal);
        }
        wait = this.allowedAt(s) - this.now();
        if (wait <= 0) break;
      }
      signal?.throwIfAborted();
      const now = this.now();
      s.lastStart = now;
      if (s.starts.length) {
        s.starts[s.head] = now;
        s.head = (s.head + 1) % s.starts.length;
      }
      return waited;
    } finally {
      s.turns.splice(s.turns.indexOf(turn), 1);
    }
  }

  /** True while `key` has a limit here. */
  knows(key: string): boolean {
    return this.keys.has(key);
  }

  /** Deliveries waiting in memory for their turn now, across destinations (a gauge). */
  waiting(): number {
    let n = 0;
    for (const s of this.keys.values()) n += s.turns.length;
    return n;
  }

  /** Forgets destinations idle for `idleMs` (their next delivery starts at once). */
  sweep(idleMs: number): void {
    const now = this.now();
    for (const [key, s] of this.keys) {
      if (!s.turns.length && now - Math.max(s.lastStart, s.next - s.gap) > idleMs) this.keys.delete(key);
    }
  }
}

export interface RateGateDeps {
  /**
   * The delivery's destination as it is now (destination-state.ts): its current limit applies. A
   * canceled state (the destination deleted or disabled, the scheduled event canceled) takes no turn.
   */
  current(snapshot: DeliveryRecord['destination'], delivery: DeliveryRecord): CurrentState | Promise<CurrentState>;
  /**
   * Parks a delivery, unchanged but for its due time and `turn_at`, in the retry tiers until
   * `dueAt` (not an attempt); it comes back to its delivery topic then, not a tier hop later.
   */
  park(delivery: DeliveryRecord, dueAt: Date, headers?: Record<string, string>): Promise<void>;
  /**
   * An ordered destination's delivery, read from its partition, whose turn is more than HOLD_MS away:
   * appended to its destination's spill, whose drain makes it at its turn (controls/ordered.ts), so
   * its record is done. False when it cannot be (it then waits for its turn here).
   */
  spill?(delivery: DeliveryRecord): Promise<boolean>;
  limiter?: RateLimiter;
}

/**
 * The sender's hook before a delivery: resolves false once the delivery may be made (at once for a
 * destination without a limit), or true once it was parked for later instead (then nothing else
 * is done with the record). A canceled delivery (its destination deleted or disabled, its scheduled
 * event canceled) passes at once, taking no turn: the handler records it canceled, sending nothing.
 */
export type RateGate = ReturnType<typeof createRateGate>;

export function createRateGate(deps: RateGateDeps) {
  const limiter = deps.limiter ?? new RateLimiter();
  const sweep = setInterval(() => limiter.sweep(120_000), 60_000);
  sweep.unref();
  // The limit read is the current one, also for a delivery routed without one (a limit set since
  // applies to it): an in-memory look-up of the destination state, which the handler makes next
  // anyway. Null for a canceled delivery: it leaves the limiter alone (its destination's turns stand).
  const limitOf = async (delivery: DeliveryRecord): Promise<RateLimit | undefined | null> => {
    const state = await deps.current(delivery.destination, delivery);
    return 'destination' in state ? state.destination.rate_limit : null;
  };
  // Back from being parked: the turn it was given, from now.
  const turnInMsOf = (delivery: DeliveryRecord) => (delivery.turn_at ? Date.parse(delivery.turn_at) - Date.now() : undefined);
  const waited = async (delivery: DeliveryRecord, go: Promise<boolean>) => {
    if (await go) metrics.rateLimited.inc({ type: delivery.destination.type, outcome: 'waited' });
  };
  return {
    limiter,
    async parked(delivery: DeliveryRecord, headers?: Record<string, string>): Promise<boolean> {
      const limit = await limitOf(delivery);
      if (limit === null) return false;
      const key = keyOf(delivery);
      const turnInMs = turnInMsOf(delivery);
      if (delivery.destination.ordered === true) {
        // An ordered destination's delivery is never parked (it would lose its place): its turn
        // within the hold, it waits here; further, it waits in its destination's spill, off the partition.
        const near = limiter.near(key, limit, turnInMs);
        if (!near) return false;
        if ('go' in near) {
          await waited(delivery, near.go);
          return false;
        }
        if (deps.spill && (await deps.spill(delivery))) return true;
        const held = limiter.admit(key, limit, true, turnInMs);
        if (held && 'go' in held) await waited(delivery, held.go);
        return false;
      }
      const admission = limiter.admit(key, limit, false, turnInMs);
      if (!admission) return false;
      if ('go' in admission) {
        await waited(delivery, admission.go);
        return false;
      }
      const dueAt = new Date(Date.now() + admission.parkMs);
      const turnAt = admission.turnKept ? (delivery.turn_at as string) : dueAt.toISOString();
      await deps.park({ ...delivery, turn_at: turnAt }, dueAt, headers);
      metrics.rateLimited.inc({ type: delivery.destination.type, outcome: 'parked' });
      return true;
    },
    /**
     * Before a try made from an ordered destination's spill (its drain, which holds no slot of the
     * partition): waits for the destination's turn however far; rejects once `signal` aborts (the
     * sender closing, the drain stopped), the turn given up.
     */
    async turn(delivery: DeliveryRecord, signal?: AbortSignal): Promise<void> {
      const limit = await limitOf(delivery);
      signal?.throwIfAborted();
      if (limit === null) return;
      const admission = limiter.admit(keyOf(delivery), limit, true, turnInMsOf(delivery), signal);
      if (admission && 'go' in admission) await waited(delivery, admission.go);
    },
    close(): void {
      clearInterval(sweep);
    },
  };
}

const keyOf = (d: DeliveryRecord) => `${d.destination.tenant_id}\u0000${d.destination.id}`;
