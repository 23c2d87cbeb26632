/**
 * Bookkeeping for consuming one partition with many records in flight at once.
 *
 * Records start in offset order but finish in any order. Kafka can only remember one offset per
 * partition, so the offset committed is the lowest one not yet finished: everything below it is
 * done, and after a crash at most the records from it onwards are delivered again.
 */
export class OffsetTracker {
  /** Offsets started and not yet released from the head, in start order. */
  private readonly pending: bigint[] = [];
  private readonly finished = new Set<bigint>();
  private highest = -1n;
  private running = 0;

  /** Registers a started record. Offsets must increase. */
  start(offset: string | bigint): void {
    const o = BigInt(offset);
    if (o <= this.highest) throw new Error(`offset ${o} started after ${this.highest}`);
    this.highest = o;
    this.pending.push(o);
    this.running++;
  }

  /** True when this offset was already started here (a refetch after a rebalance). */
  seen(offset: string | bigint): boolean {
    return BigInt(offset) <= this.highest;
  }

  finish(offset: string | bigint): void {
    this.running--;
    this.finished.add(BigInt(offset));
    while (this.pending.length && this.finished.has(this.pending[0] as bigint)) {
      this.finished.delete(this.pending.shift() as bigint);
    }
  }

  /** The offset to commit (the next to read after a restart), or null before any record. */
  committable(): string | null {
    if (this.highest < 0n) return null;
    return String(this.pending.length ? (this.pending[0] as bigint) : this.highest + 1n);
  }

  /** Records started and not finished (finished ones behind an unfinished one do not count). */
  get inFlight(): number {
    return this.running;
  }
}

/**
 * Runs tasks with at most `perKey` running for one key at a time; the rest of that key's tasks wait
 * their turn in arrival order. A slow or hanging key therefore holds at most `perKey` slots.
 */
export class KeyedLimiter {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();
  private readonly perKey: number;

  constructor(perKey: number) {
    this.perKey = perKey;
  }

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    if ((this.running.get(key) ?? 0) >= this.perKey) {
      await new Promise<void>((resolve) => {
        const q = this.waiting.get(key) ?? [];
        q.push(resolve);
        this.waiting.set(key, q);
      });
    } else {
      this.running.set(key, (this.running.get(key) ?? 0) + 1);
    }
    try {
      return await task();
    } finally {
      const next = this.waiting.get(key)?.shift();
      if (next)
        next(); // hand the slot straight to the next waiter of this key
      else {
        const n = (this.running.get(key) ?? 1) - 1;
        if (n > 0) this.running.set(key, n);
        else this.running.delete(key);
      }
      if (this.waiting.get(key)?.length === 0) this.waiting.delete(key);
    }
  }

  /** Tasks of this key waiting for a slot. */
  queued(key: string): number {
    return this.waiting.get(key)?.length ?? 0;
  }
}
