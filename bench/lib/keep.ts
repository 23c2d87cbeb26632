// The `hanging` scenario's keep ratio: the throughput per healthy destination while a fifth of the
// destinations hang, over the same with all healthy. One pair of one-minute phases also reads the
// host's drift between them (79-115% for the same code on a slower host), so `--hanging-pairs N`
// repeats the pair in the order healthy, hanging, hanging, healthy, ... (ABBA): a drift steady over
// the run pushes odd and even pairs in opposite directions, and with an even N their mean cancels
// most of it.
import type { PhaseResult } from './report.ts';
import { round } from './stats.ts';

export type HangingKind = 'healthy' | 'hanging';

export interface HangingPhase {
  kind: HangingKind;
  /** `healthy` and `hanging` for the first pair (as in every result), `healthy-2`, `hanging-2`, ... after. */
  phase: string;
}

/** The phases of `pairs` pairs in run order. */
export function hangingPhases(pairs: number): HangingPhase[] {
  if (!Number.isInteger(pairs) || pairs < 1) throw new Error(`--hanging-pairs wants a whole number ≥ 1, got ${pairs}`);
  const out: HangingPhase[] = [];
  for (let pair = 1; pair <= pairs; pair++) {
    const kinds: HangingKind[] = pair % 2 ? ['healthy', 'hanging'] : ['hanging', 'healthy'];
    for (const kind of kinds) out.push({ kind, phase: phaseName(kind, pair) });
  }
  return out;
}

/** Whether a phase of the `hanging` scenario is one with hanging destinations (`hanging`, `hanging-2`, ...). */
export function isHangingPhase(phase: string): boolean {
  return /^hanging(-\d+)?$/.test(phase);
}

export interface Keep {
  /** Per pair, in run order: hanging ÷ healthy, per healthy destination. */
  ratios: number[];
  /** Their mean: the figure held against the target. */
  mean: number;
  /** The first pair's deliveries per healthy destination per second, which a one-pair summary names. */
  first: { healthy: number; hanging: number };
}

/** The keep ratio of the `hanging` scenario's complete pairs, or null without one. */
export function keepOf(phases: readonly PhaseResult[]): Keep | null {
  const perDest = (phase: string) =>
    phases.find((p) => p.scenario === 'hanging' && p.phase === phase)?.delivery.perDestinationPerSec ?? null;
  const pairs: Keep['first'][] = [];
  for (let pair = 1; ; pair++) {
    const healthy = perDest(phaseName('healthy', pair));
    const hanging = perDest(phaseName('hanging', pair));
    if (healthy === null || hanging === null) break;
    pairs.push({ healthy, hanging });
  }
  const [first] = pairs;
  if (!first) return null;
  const ratios = pairs.map((p) => round(p.hanging / Math.max(1e-9, p.healthy), 3));
  return { ratios, mean: round(ratios.reduce((a, b) => a + b, 0) / ratios.length, 3), first };
}

const phaseName = (kind: HangingKind, pair: number) => (pair === 1 ? kind : `${kind}-${pair}`);
