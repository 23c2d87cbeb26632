/**
 * The bytes of records in flight across all partitions of one consumer, bounded: a record may start
 * while the total is under `max`, or when nothing is in flight (one record always fits, however
 * large). With the per-partition concurrency this bounds what a consumer holds in memory whatever
 * the size of the events. The gateway bounds the request bodies it holds with one too (`tryTake`).
 */
export class ByteBudget {
  private used = 0;
  private readonly waiters: Array<() => void> = [];
  readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  get full(): boolean {
    return this.used > 0 && this.used >= this.max;
  }

  get inUse(): number {
    return this.used;
  }

  take(bytes: number): void {
    this.used += bytes;
  }

  /** Takes `bytes` if they fit, or if nothing is taken (one item of any size always fits). */
  tryTake(bytes: number): boolean {
    if (this.used > 0 && this.used + bytes > this.max) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used -= bytes;
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves at the next `give` (the caller checks `full` again). */
  freed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
