// Running many records of a partition at once: the per-key limiter (KeyedLimiter), the dispatch both
// adapters run records through (createKeyedDispatch) and the in-place retry of our own faults. The
// offsets such a partition may commit are OffsetTracker's (offset-tracker.ts); the bytes in flight
// across partitions, ByteBudget's (byte-budget.ts).
import { ByteBudget } from './byte-budget.ts';
import type { OffsetTracker } from './offset-tracker.ts';

/** What `KeyedLimiter.run` returns for a task taken off a stalled key's queue before it started. */
export const DIVERTED: unique symbol = Symbol('diverted');

export interface KeyHealth {
  /** A key whose oldest running task has run this long is stalled. */
  stallMs?: number;
  /**
   * A task that ran this long marks its key slow: one slot instead of `perKey` until a task of the
   * key finishes sooner. (The sender sets it just under the delivery timeout: a timed-out delivery.)
   */
  slowMs?: number;
}

/**
 * Given to a running task: `restart()` makes the key's stall and slow clocks count the task from
 * now, for a task that first waited for something other than its key (a rate-limit turn, a
 * scheduled time). Such a wait is not the key failing to keep up.
 */
export interface KeyClock {
  restart(): void;
}

interface KeyState {
  running: number;
  /** performance.now() at the start of each running task, oldest first. */
  starts: number[];
  waiting: Array<(start: boolean) => void>;
  /** Since when the key has been slow, or null. */
  slowSince: number | null;
  /** An ordered key (pin): one slot, and its waiting tasks are never diverted. */
  pinned: boolean;
}

/**
 * Runs tasks with at most `perKey` running for one key at a time; the rest of that key's tasks wait
 * their turn in arrival order. A slow or hanging key therefore holds at most `perKey` slots, and only
 * one once a task of it has run into `slowMs`. `divertStalled` takes waiting tasks of stalled keys
 * off the queue so they stop holding their partition's slots (the caller parks them).
 */
export class KeyedLimiter {
  private readonly keys = new Map<string, KeyState>();
  private readonly perKey: number;
  private readonly health: KeyHealth;

  constructor(perKey: number, health: KeyHealth = {}) {
    this.perKey = perKey;
    this.health = health;
  }

  private stateOf(key: string): KeyState {
    let s = this.keys.get(key);
    if (!s) {
      s = { running: 0, starts: [], waiting: [], slowSince: null, pinned: false };
      this.keys.set(key, s);
    }
    return s;
  }

  private limit(s: KeyState): number {
    return s.slowSince === null && !s.pinned ? this.perKey : 1;
  }

  private forget(key: string, s: KeyState): void {
    // A slow key is remembered while idle, so its next burst starts with one slot.
    if (!s.running && !s.waiting.length && s.slowSince === null) this.keys.delete(key);
  }

  /**
   * Marks `key` ordered while it has tasks: one runs at a time, the rest wait in arrival order, and
   * none is ever diverted (that would reorder them). Called before each of its tasks' `run`.
   */
  pin(key: string): void {
    this.stateOf(key).pinned = true;
  }

  async run<T>(key: string, task: (clock: KeyClock) => Promise<T>): Promise<T | typeof DIVERTED> {
    const s = this.stateOf(key);
    if (s.running >= this.limit(s)) {
      // The finishing task hands its slot over (running stays counted), or divertStalled says no.
      if (!(await new Promise<boolean>((resolve) => s.waiting.push(resolve)))) {
        this.forget(key, s);
        return DIVERTED;
      }
    } else {
      s.running++;
    }
    let started = performance.now();
    s.starts.push(started);
    const clock: KeyClock = {
      restart() {
        // Its start moves to the end: `starts` stays oldest first.
        s.starts.splice(s.starts.indexOf(started), 1);
        started = performance.now();
        s.starts.push(started);
      },
    };
    try {
      return await task(clock);
    } finally {
      const now = performance.now();
      s.starts.splice(s.starts.indexOf(started), 1);
      if (this.health.slowMs !== undefined) {
        if (now - started < this.health.slowMs) s.slowSince = null;
        else s.slowSince ??= now;
      }
      s.running--;
      while (s.waiting.length && s.running < this.limit(s)) {
        s.running++;
        (s.waiting.shift() as (start: boolean) => void)(true);
      }
      this.forget(key, s);
    }
  }

  /**
   * How long the key has been stalled, in ms: the age of its oldest running task once that reaches
   * `stallMs`, or the time since it became slow, whichever is longer; 0 when it is not stalled.
   */
  stalledFor(key: string, now = performance.now()): number {
    const s = this.keys.get(key);
    if (!s) return 0;
    const oldest = s.starts.length ? now - (s.starts[0] as number) : 0;
    const stalled = this.health.stallMs !== undefined && oldest >= this.health.stallMs ? oldest : 0;
    return s.slowSince === null ? stalled : Math.max(stalled, now - s.slowSince, 1);
  }

  /**
   * Takes the waiting tasks of every stalled key off its queue, beyond the `keep` oldest; their
   * `run` resolves DIVERTED without running. Returns how many were taken.
   */
  divertStalled(keep: number): number {
    const now = performance.now();
    let n = 0;
    for (const [key, s] of this.keys) {
      if (s.pinned || s.waiting.length <= keep || !this.stalledFor(key, now)) continue;
      for (const resolve of s.waiting.splice(keep)) {
        resolve(false);
        n++;
      }
    }
    return n;
  }

  /** True while `key` is pinned (ordered) and has tasks. */
  pinned(key: string): boolean {
    return this.keys.get(key)?.pinned ?? false;
  }

  /** True when a task of this key would have to wait for a slot. */
  full(key: string): boolean {
    const s = this.keys.get(key);
    return s !== undefined && s.running >= this.limit(s);
  }

  /** Tasks of this key waiting for a slot. */
  queued(key: string): number {
    return this.keys.get(key)?.waiting.length ?? 0;
  }

  /** True while a task of any key waits for a slot. */
  waiting(): boolean {
    for (const s of this.keys.values()) if (s.waiting.length) return true;
    return false;
  }
}

/**
 * Runs `what` until it passes, waiting 200 ms, doubling up to 30 s, between tries: how both buses
 * retry our own faults in place (the record stays unfinished, so its offset is not committed), and
 * how the Kafka bus retries creating topics. False when `stopped` (closing, a deadline) interrupts
 * it; an error `failed` throws ends it at once.
 */
export async function retryInPlace(
  what: () => Promise<void>,
  o: { stopped(): boolean; wait(ms: number): Promise<void>; failed(err: unknown, attempt: number): void },
): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      await what();
      return true;
    } catch (err) {
      o.failed(err, attempt);
      if (o.stopped()) return false;
      await o.wait(Math.min(30_000, 200 * 2 ** attempt));
      if (o.stopped()) return false;
    }
  }
}

/**
 * What a record's handler may resolve to: the rest of the record's work, which needs no slot of the
 * record's key. It runs once the key's slot is free again, retried in place like the handler, and
 * the record is done only after it. The sender writes its attempt this way: a destination's slots
 * bound the requests to it, and waiting for Kafka's acknowledgement in one held a slot idle.
 */
export type AfterKey = () => Promise<void>;

export interface KeyedDispatchOptions<R extends { key: string }> {
  /** Records in flight at once per partition. */
  concurrency: number;
  keyConcurrency: number;
  health: KeyHealth;
  /** Tasks a stalled key may keep waiting for a slot; beyond that they go to `divert`. */
  keyBacklog: number;
  /** `clock`: the record's time on its key's stall and slow clocks (KeyClock). */
  handle(record: R, clock: KeyClock): Promise<void> | Promise<AfterKey>;
  /** Takes a record of a stalled key instead of handling it (parks it); told how long the key has been stalled. */
  divert?(record: R, stalledMs: number): Promise<void>;
  /** Runs `what` until it passes (our own faults are retried in place); false when closing interrupted it. */
  untilDone(what: () => Promise<void>, record: R): Promise<boolean>;
  /** Bytes of records in flight at most, across partitions (see ByteBudget); unbounded when absent. */
  maxInFlightBytes?: number;
  /**
   * True for a record whose key must keep its order: the key runs one record at a time, in arrival
   * order, and is never diverted (KeyedLimiter.pin).
   */
  ordered?(record: R): boolean;
  /** The key a record runs under in the limiter (its slots, health, pin and diversion); default: `record.key`. */
  dispatchKey?(record: R): string;
}

/**
 * The per-record part of a consumer with many records in flight, shared by the Kafka and the
 * embedded bus: each record runs under its key's limit, or is diverted when its key is stalled. The
 * record counts as done (its offset may be committed) only once handled or diverted. "Key" here is
 * the record's dispatch key (`dispatchKey`, by default the record key).
 */
export function createKeyedDispatch<R extends { key: string }>(o: KeyedDispatchOptions<R>) {
  const limiter = new KeyedLimiter(o.keyConcurrency, o.health);
  const keyOf = o.dispatchKey ?? ((record: R) => record.key);
  const divert = o.divert;
  // Waiting records of a key that stalls after they queued are taken off in a sweep, which runs only
  // while some record waits for its key's slot: an idle consumer keeps no timer waking it.
  const sweepEveryMs = divert && o.health.stallMs !== undefined ? Math.max(50, o.health.stallMs / 4) : null;
  let sweep: ReturnType<typeof setInterval> | null = null;
  const armSweep = () => {
    if (sweepEveryMs === null || sweep) return;
    sweep = setInterval(() => {
      limiter.divertStalled(o.keyBacklog);
      if (!limiter.waiting() && sweep) {
        clearInterval(sweep);
        sweep = null;
      }
    }, sweepEveryMs);
    sweep.unref();
  };
  const diverted = (record: R, key: string) =>
    o.untilDone(() => (divert as NonNullable<typeof divert>)(record, Math.max(1, limiter.stalledFor(key))), record);
  const budget = new ByteBudget(o.maxInFlightBytes ?? Number.POSITIVE_INFINITY);
  // An idle slow key is not full: its next record is let through to find out whether it recovered.
  const divertsNow = (key: string): number =>
    divert && !limiter.pinned(key) && limiter.full(key) && limiter.queued(key) >= o.keyBacklog ? limiter.stalledFor(key) : 0;
  return {
    limiter,
    budget,
    /**
     * How long `key` has been stalled when a record of it starting now would be diverted, else 0
     * (also for a key this consumer holds nothing of).
     */
    divertsNow,
    /**
     * Starts one record; resolves once it is under way (a record diverted at once: as its hand-off
     * starts), with `finished`, which settles after `settled(true)` when the record is done, or
     * `settled(false)` when closing interrupted it.
     */
    async start(record: R, settled: (done: boolean) => void): Promise<{ finished: Promise<void> }> {
      const key = keyOf(record);
      if (o.ordered?.(record)) limiter.pin(key);
      else if (divertsNow(key)) {
        // Done only once handed off (written): nothing is lost if we crash meanwhile. The records
        // behind it do not wait for the write, which may linger to share a produce request; it
        // keeps its partition slot until then, as a delivery waiting for its attempt's write does.
        return { finished: diverted(record, key).then(settled) };
      }
      let after: AfterKey | null = null;
      if (limiter.full(key)) armSweep();
      const handled = limiter.run(key, (clock) =>
        o.untilDone(async () => {
          after = (await o.handle(record, clock)) ?? null;
        }, record),
      );
      const finished = handled.then(async (r) => {
        if (r === DIVERTED) settled(await diverted(record, key));
        else settled(r && after ? await o.untilDone(after, record) : r);
      });
      return { finished };
    },
    /** True when a partition may start another record: under its concurrency and the byte budget. */
    hasRoom(partition: { tracker: OffsetTracker }): boolean {
      return partition.tracker.inFlight < o.concurrency && !budget.full;
    },
    /** Resolves when a record of the partition settles or bytes come back (then ask hasRoom again). */
    roomFreed(partition: { waiters: Array<() => void> }): Promise<void> {
      return new Promise((resolve) => {
        partition.waiters.push(resolve);
        if (budget.full) void budget.freed().then(resolve);
      });
    },
    /**
     * Starts one record of a partition (offsets in order): in flight in `partition.tracker` until
     * it is done, then the partition's waiters for a free slot are woken. Resolves once under way;
     * the promise added to `inflight` settles when the record is done or closing interrupted it.
     */
    async run(
      record: R & { offset: string },
      partition: { tracker: OffsetTracker; waiters: Array<() => void> },
      inflight: Set<Promise<void>>,
      bytes = 0,
    ): Promise<void> {
      partition.tracker.start(record.offset);
      budget.take(bytes);
      const { finished } = await this.start(record, (done) => {
        if (done) partition.tracker.finish(record.offset);
        budget.give(bytes);
        for (const w of partition.waiters.splice(0)) w();
      });
      const task = finished.finally(() => inflight.delete(task));
      inflight.add(task);
    },
    /** True while the stall sweep runs (some record waits for its key's slot). */
    get sweeping(): boolean {
      return sweep !== null;
    },
    close(): void {
      if (sweep) clearInterval(sweep);
      sweep = null;
    },
  };
}
