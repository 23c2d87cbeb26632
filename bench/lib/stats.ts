// Small statistics helpers shared by the runner, the receiver and the load generator.

export interface Summary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  /** Absent in results recorded before it was summarised. */
  p95?: number;
  p99: number;
  p999: number;
  max: number;
}

export const EMPTY_SUMMARY: Summary = { count: 0, min: 0, mean: 0, p50: 0, p90: 0, p95: 0, p99: 0, p999: 0, max: 0 };

/** Exact percentiles (nearest rank) of the values; sorts a copy. */
export function summarize(values: ArrayLike<number>): Summary {
  const n = values.length;
  if (n === 0) return { ...EMPTY_SUMMARY };
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i] as number;
  const at = (q: number) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))] as number;
  return {
    count: n,
    min: round(sorted[0] as number),
    mean: round(sum / n),
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p95: round(at(0.95)),
    p99: round(at(0.99)),
    p999: round(at(0.999)),
    max: round(sorted[n - 1] as number),
  };
}

export const round = (x: number, digits = 2): number => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

/** A growable column of numbers in a typed array (no per-sample object). */
export class Column {
  data: Float64Array;
  length = 0;
  private readonly cap: number;
  constructor(initial = 65_536, cap = 16_000_000) {
    this.data = new Float64Array(initial);
    this.cap = cap;
  }
  push(v: number): boolean {
    if (this.length === this.data.length) {
      if (this.length >= this.cap) return false;
      const next = new Float64Array(Math.min(this.cap, this.data.length * 2));
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
    return true;
  }
  clear(): void {
    this.length = 0;
  }
  view(): Float64Array {
    return this.data.subarray(0, this.length);
  }
}

/** Time-stamped samples (epoch ms, value); percentiles of a time window. */
export class TimedSamples {
  readonly at = new Column();
  readonly value = new Column();
  dropped = 0;
  add(at: number, value: number): void {
    if (!this.at.push(at)) {
      this.dropped++;
      return;
    }
    this.value.push(value);
  }
  clear(): void {
    this.at.clear();
    this.value.clear();
    this.dropped = 0;
  }
  window(from = -Infinity, to = Infinity): Float64Array {
    const at = this.at.view();
    const v = this.value.view();
    const out = new Float64Array(at.length);
    let k = 0;
    for (let i = 0; i < at.length; i++) {
      const t = at[i] as number;
      if (t >= from && t < to) out[k++] = v[i] as number;
    }
    return out.subarray(0, k);
  }
  /** Counts per whole second (epoch seconds) in the window. */
  perSecond(from = -Infinity, to = Infinity): Map<number, number> {
    const at = this.at.view();
    const out = new Map<number, number>();
    for (let i = 0; i < at.length; i++) {
      const t = at[i] as number;
      if (t < from || t >= to) continue;
      const s = Math.floor(t / 1000);
      out.set(s, (out.get(s) ?? 0) + 1);
    }
    return out;
  }
  countIn(from = -Infinity, to = Infinity): number {
    const at = this.at.view();
    let k = 0;
    for (let i = 0; i < at.length; i++) {
      const t = at[i] as number;
      if (t >= from && t < to) k++;
    }
    return k;
  }
}

/** Wall-clock time in milliseconds with sub-millisecond resolution; comparable across processes. */
export const nowMs = (): number => performance.timeOrigin + performance.now();

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
