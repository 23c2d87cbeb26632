/**
 * The last `max` distinct keys added, for membership checks: a Set beside a ring of the same keys,
 * so the oldest is evicted by its ring slot. Evicting a Set's first entry through its iterator
 * instead costs time in proportion to the entries deleted before it that V8 has not yet compacted
 * away: 9-17 µs an add at 20,000 keys, against 0.24-0.5 µs here (docs/performance.md).
 */
export class RecentKeys {
  private readonly keys = new Set<string>();
  private readonly ring: Array<string | undefined>;
  private next = 0;

  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`RecentKeys: max must be a positive integer, not ${max}`);
    this.ring = new Array<string | undefined>(max).fill(undefined);
  }

  get size(): number {
    return this.keys.size;
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }

  /** Adds `key` (a key already held keeps its place); past `max`, the oldest key goes. */
  add(key: string): void {
    if (this.keys.has(key)) return;
    const oldest = this.ring[this.next];
    if (oldest !== undefined) this.keys.delete(oldest);
    this.ring[this.next] = key;
    this.next = (this.next + 1) % this.ring.length;
    this.keys.add(key);
  }
}
