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
