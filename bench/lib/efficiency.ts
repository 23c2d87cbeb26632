// The cost of a quiet pipeline: the fixed-rate `rate300` phase and the `idle` phase, in
// either deployment (the four services with Kafka and Postgres, or embedded mode's one process).
// Pure: the targets and the summary's section are computed from a run's phases (unit-tested in
// test/bench/efficiency.test.ts), so the runner and --render state them the same way.
import type { PhaseResult, Target } from './report.ts';

/** Events per second of the `rate300` phase: a moderate, steady load, where most deployments live. */
export const MODERATE_RATE = 300;
/** Tenants of the `rate300` and `idle` phases, one webhook destination each. */
export const MODERATE_TENANTS = 10;
/** Pipeline CPU per delivery at MODERATE_RATE, ms (docs/performance.md, "Targets"). */
export const MODERATE_CPU_TARGET_MS = { stack: 2.0, embedded: 1.5 } as const;
/** publish→receive p99 at MODERATE_RATE, ms, in both deployments. */
export const MODERATE_P99_TARGET_MS = 50;
/** An idle process (no events) uses under this share of a core, percent. */
export const IDLE_TARGET_PCT = 1;
/** Embedded mode's memory goals (docs/performance.md, "Targets"): reported beside the figures, not judged here. */
export const EMBEDDED_RSS_GOALS_MB = { idle: 250, peak: 500 } as const;

export type Deployment = 'stack' | 'embedded';

const isModerate = (p: PhaseResult) => p.scenario === 'rate300';
const isIdle = (p: PhaseResult) => p.scenario === 'idle';

/** The processes whose CPU is the pipeline's: the services (or the embedded process), Kafka and Postgres. */
export function pipelineProcesses(deployment: Deployment, services: readonly string[]): string[] {
  return deployment === 'embedded' ? ['embedded'] : [...services, 'kafka', 'postgres'];
}

/** The processes judged idle: each service (not the broker or the database, which a deployment may share). */
export function idleJudged(deployment: Deployment, services: readonly string[]): string[] {
  return deployment === 'embedded' ? ['embedded'] : [...services];
}

/** The moderate-load and idle targets read from the run's rate300 and idle phases; none without them. */
export function moderateTargets(phases: readonly PhaseResult[], deployment: Deployment, services: readonly string[]): Target[] {
  const out: Target[] = [];
  const cpuTarget = MODERATE_CPU_TARGET_MS[deployment];
  for (const p of phases.filter(isModerate)) {
    const d = p.delivery;
    const load = `load1 ${p.machine.load1Start} → ${p.machine.load1End}`;
    out.push({
      target: `${deployment}: pipeline CPU ≤ ${cpuTarget} ms per delivery at ${p.targetRate}/s`,
      measured: `${p.efficiency.cpuMsPerDelivery} ms (${p.efficiency.pipelineCpuPct}% of a core for ${d.deliveredPerSec} deliveries/s; ${load})`,
      met: p.efficiency.cpuMsPerDelivery <= cpuTarget,
    });
    out.push({
      target: `${deployment}: p99 publish→receive ≤ ${MODERATE_P99_TARGET_MS} ms at ${p.targetRate}/s`,
      measured: `p99 ${d.latencyMs.p99} ms (p50 ${d.latencyMs.p50}, max ${d.latencyMs.max}; ${load})`,
      met: d.latencyMs.p99 <= MODERATE_P99_TARGET_MS,
    });
  }
  for (const p of phases.filter(isIdle)) {
    const judged = idleJudged(deployment, services).filter((n) => p.machine.procs[n]);
    const cpu = (n: string) => p.machine.procs[n]?.cpuAvgPct ?? 0;
    out.push({
      target: `${deployment}: an idle process uses < ${IDLE_TARGET_PCT}% of a core`,
      measured: `${judged.map((n) => `${n} ${cpu(n)}%`).join(', ')} over ${p.machine.seconds} s (load1 ${p.machine.load1Start} → ${p.machine.load1End})`,
      met: judged.length > 0 && judged.every((n) => cpu(n) < IDLE_TARGET_PCT),
    });
  }
  if (deployment === 'embedded') {
    const mem = embeddedMemory(phases);
    if (mem.idleMb !== null || mem.peakMb !== null)
      out.push({
        target: `embedded RSS: idle ≤ ${EMBEDDED_RSS_GOALS_MB.idle} MB, peak ≤ ${EMBEDDED_RSS_GOALS_MB.peak} MB`,
        measured: `idle ${mbOf(mem.idleMb)}, peak ${mbOf(mem.peakMb)}`,
        // Judged when both were measured (a run with the idle and rate300 phases, as the default).
        met:
          mem.idleMb === null || mem.peakMb === null
            ? null
            : mem.idleMb <= EMBEDDED_RSS_GOALS_MB.idle && mem.peakMb <= EMBEDDED_RSS_GOALS_MB.peak,
      });
  }
  return out;
}

const mbOf = (mb: number | null) => (mb === null ? 'not measured' : `${mb} MB`);

/**
 * Embedded mode's RSS: idle, the highest sample of the idle phase; peak, the process's VmHWM (the
 * kernel's peak over its life) in the rate300 phase, or in any phase when there is none.
 */
export function embeddedMemory(phases: readonly PhaseResult[]): { idleMb: number | null; peakMb: number | null } {
  const idle = phases.find(isIdle)?.machine.procs.embedded;
  const loaded = phases.filter(isModerate);
  const peaks = (loaded.length ? loaded : phases.filter((p) => !isIdle(p))).flatMap((p) => {
    const s = p.machine.procs.embedded;
    return s ? [Math.max(s.hwmMb, s.rssMaxMb)] : [];
  });
  return { idleMb: idle ? idle.rssMaxMb : null, peakMb: peaks.length ? Math.max(...peaks) : null };
}

const fixed = (x: number, d: number) => x.toFixed(d);

/**
 * The summary's section for the rate300 and idle phases: CPU per delivery per process and the
 * latency at the fixed rate; CPU and wake-ups per process while idle. Empty without those phases.
 */
export function moderateMarkdown(phases: readonly PhaseResult[], deployment: Deployment, services: readonly string[]): string {
  const moderate = phases.filter(isModerate);
  const idle = phases.filter(isIdle);
  if (!moderate.length && !idle.length) return '';
  const procs = pipelineProcesses(deployment, services);
  const L: string[] = [
    `## Moderate load and idle (${deployment === 'embedded' ? 'embedded mode: one process' : 'the four services, Kafka, Postgres'})`,
    '',
  ];
  if (moderate.length) {
    L.push(
      `| phase | events/s | delivered/s | pipeline CPU % | ms / delivery | ${procs.map((n) => `${n} ms`).join(' | ')} | p50 / p99 / max ms | load1 |`,
      `|---|---:|---:|---:|---:|${procs.map(() => '---:').join('|')}|---|---|`,
    );
    for (const p of moderate) {
      const per = (n: string) => fixed(((p.machine.procs[n]?.cpuAvgPct ?? 0) * 10) / Math.max(1, p.delivery.deliveredPerSec), 3);
      const l = p.delivery.latencyMs;
      L.push(
        `| ${p.scenario} / ${p.phase} | ${p.targetRate} | ${p.delivery.deliveredPerSec} | ${p.efficiency.pipelineCpuPct} | ${fixed(p.efficiency.cpuMsPerDelivery, 3)} | ` +
          `${procs.map(per).join(' | ')} | ${l.p50} / ${l.p99} / ${l.max} | ${p.machine.load1Start} → ${p.machine.load1End} |`,
      );
    }
    L.push(
      '',
      `Target: ≤ ${MODERATE_CPU_TARGET_MS[deployment]} ms of pipeline CPU per delivery and p99 ≤ ${MODERATE_P99_TARGET_MS} ms (docs/performance.md). ` +
        'The per-process columns are that process\'s average CPU over the window divided by the deliveries per second; wake-ups per second are in "Waiting for a CPU".',
      '',
    );
  }
  if (idle.length) {
    L.push(
      `| phase | ${procs.map((n) => `${n} CPU % · wake-ups/s · RSS MB`).join(' | ')} | load1 |`,
      `|---|${procs.map(() => '---:').join('|')}|---|`,
    );
    for (const p of idle) {
      const cell = (n: string) => {
        const s = p.machine.procs[n];
        return s ? `${s.cpuAvgPct} · ${(s.runsPerS ?? 0).toLocaleString('en-US')} · ${Math.round(s.rssMaxMb)}` : '';
      };
      L.push(`| ${p.scenario} / ${p.phase} | ${procs.map(cell).join(' | ')} | ${p.machine.load1Start} → ${p.machine.load1End} |`);
    }
    L.push(
      '',
      `No events for ${idle[0]?.machine.seconds ?? 0} s after one probe event; target: each ${deployment === 'embedded' ? 'process' : 'service'} < ${IDLE_TARGET_PCT}% of a core. ` +
        'Wake-ups count every time one of its threads was put on a CPU.',
      '',
    );
  }
  if (deployment === 'embedded') {
    const mem = embeddedMemory(phases);
    L.push(
      `Embedded RSS: idle ${mbOf(mem.idleMb)} (goal ≤ ${EMBEDDED_RSS_GOALS_MB.idle}), peak ${mbOf(mem.peakMb)} (VmHWM; goal ≤ ${EMBEDDED_RSS_GOALS_MB.peak}).`,
      '',
    );
  }
  return `${L.join('\n')}\n`;
}

/**
 * The sum of a metric's samples in a Prometheus text exposition whose labels include `labels`
 * (embedded mode's stored attempts: `switchyard_records_consumed_total{group="attempts",...}`).
 */
export function sumMetric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const brace = line.indexOf('}');
    const labelText = brace < 0 ? '' : line.slice(name.length + 1, brace);
    if (!Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) continue;
    const value = Number(
      line
        .slice(brace < 0 ? name.length : brace + 1)
        .trim()
        .split(' ')[0],
    );
    if (Number.isFinite(value)) sum += value;
  }
  return sum;
}
