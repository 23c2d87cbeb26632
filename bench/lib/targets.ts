// The two targets whose reading docs/performance.md ("Targets") states, computed from a
// run's phases, so the runner and --render (re-rendering an older result) state them the same way.
import type { ProcSummary } from './proc.ts';
import { isHangingPhase } from './keep.ts';
import { type PhaseResult, SERVICE_ANON_TARGET_MB, type Target } from './report.ts';

/**
 * Throughput ÷ the bare ceiling of every full-speed phase: reported, not judged (`met: null`).
 * Embedded mode's line says so, as its other targets do (a baseline lists both deployments').
 */
export function throughputTarget(phases: readonly PhaseResult[], deployment: 'stack' | 'embedded' = 'stack'): Target | null {
  const full = phases.filter((p) => p.targetRate === null && !isHangingPhase(p.phase));
  if (!full.length) return null;
  return {
    target: `${deployment === 'embedded' ? 'embedded: ' : ''}end-to-end throughput ÷ bare ceiling (reported)`,
    measured: full.map((p) => `${p.scenario}${p.phase === 'main' ? '' : `/${p.phase}`} ${(p.ceilingRatio * 100).toFixed(0)}%`).join(', '),
    met: null,
  };
}

/**
 * Each service's own memory (anonymous RSS) at its highest, against SERVICE_ANON_TARGET_MB, with its
 * whole RSS (VmHWM, the kernel's peak) beside it. Results from before anonMaxMb existed give the
 * anonymous part of their highest RSS sample instead; results with neither are not judged.
 */
export function memoryTarget(phases: readonly PhaseResult[], services: readonly string[]): Target {
  const peak = (svc: string, f: (s: ProcSummary) => number | undefined) =>
    Math.max(0, ...phases.map((p) => (p.machine.procs[svc] ? (f(p.machine.procs[svc]) ?? 0) : 0)));
  const anon = (svc: string) => peak(svc, (s) => s.anonMaxMb ?? s.rssAtMax?.anonMb);
  const rss = (svc: string) => peak(svc, (s) => Math.max(s.rssMaxMb, s.hwmMb));
  const target = `each service's own memory (anonymous RSS) ≤ ${SERVICE_ANON_TARGET_MB} MB at peak`;
  if (!services.every((s) => anon(s) > 0)) {
    return { target, measured: `not recorded in this run; RSS ${services.map((s) => `${s} ${rss(s)} MB`).join(', ')}`, met: null };
  }
  return {
    target,
    measured: services.map((s) => `${s} ${anon(s)} MB (RSS ${rss(s)} MB)`).join(', '),
    met: services.every((s) => anon(s) <= SERVICE_ANON_TARGET_MB),
  };
}

/** An older result's targets with these two restated as decided; the others as they were recorded. */
export function restateTargets(r: { phases: readonly PhaseResult[]; targets: Target[] }, services: readonly string[]): Target[] {
  const out: Target[] = [];
  const tp = throughputTarget(r.phases);
  if (tp) out.push(tp);
  out.push(...r.targets.filter((t) => !/^end-to-end throughput|^each service/.test(t.target)));
  out.push(memoryTarget(r.phases, services));
  return out;
}
