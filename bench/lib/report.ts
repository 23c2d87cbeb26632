// Result types of a benchmark run, and the Markdown summary and SVG chart written from them.
import { readFileSync } from 'node:fs';
import type { CeilingResult } from '../load.ts';
import { isHangingPhase } from './keep.ts';
import type { ProfileSummary } from './profile.ts';
import { type PgStatements, statementsMarkdown } from './pg-statements.ts';
import { profileMarkdown } from './profile.ts';
import type { ProcSummary, WindowSummary } from './proc.ts';
import { MODERATE_RATE, moderateMarkdown } from './efficiency.ts';
import { scheduledTable, sendersTable, typesTable } from './scenarios.ts';
import type { Summary } from './stats.ts';

export interface Topology {
  tenants: number;
  destinationsPerTenant: number;
  /** The first `hangingPerTenant` destinations of every tenant hang until the delivery timeout. */
  hangingPerTenant: number;
}

export interface SeriesPoint {
  /** Seconds since the load started. */
  s: number;
  published: number;
  delivered: number;
  attempts: number;
}

export interface PhaseResult {
  scenario: string;
  phase: string;
  topology: Topology;
  via: string;
  /** Events per second asked for; null: as fast as accepted (within the outstanding-deliveries cap). */
  targetRate: number | null;
  durationS: number;
  warmupS: number;
  backlogCap: number | null;
  /** Where publish→delivered was read: the peer's receive time (webhook), or the attempt's stored time. */
  latencyFrom?: 'peer' | 'attempt';
  /**
   * Events published this many seconds ahead (deliver_at): `delivery.latencyMs` is then deliver_at →
   * receive, each delivery's lateness, and the window is of arrivals that much later than the load's.
   */
  scheduledS?: number;
  /** Sender processes of the phase (1 unless the scenario starts more). */
  senders?: number;
  publish: {
    eventsSent: number;
    eventsAccepted: number;
    rejected: Record<string, number>;
    firstErrors: string[];
    /** Events accepted per second in the measurement window. */
    acceptedPerSec: number;
    /** Per request. */
    latencyMs: Summary;
    behindMaxMs: number;
    gatedS: number;
  };
  delivery: {
    healthyPerEvent: number;
    healthyDestinations: number;
    /** Deliveries to healthy destinations per second in the window. */
    deliveredPerSec: number;
    /** Events whose deliveries arrived, per second (delivered / healthy deliveries per event). */
    eventsPerSec: number;
    /** Per healthy destination. */
    perDestinationPerSec: number;
    /** Attempt rows stored per second in the window; null where they could not be counted. */
    attemptsPerSec: number | null;
    /** publish -> receive, healthy destinations, arrivals in the window. */
    latencyMs: Summary;
    expected: number;
    received: number;
    /** Repeats of a webhook-id on a healthy destination. */
    duplicates: number;
    /** Repeats on hanging destinations: their retries, expected. */
    hangRepeats?: number;
    missing: number;
    hungArrivals: number;
    drainS: number;
    verify: { checked: number; ok: number; failed: number; noSecret: number; unsigned: number; errors: string[] };
  };
  stored: { attempts: number | null; attemptsByStatus: Record<string, number>; events: number };
  /** Requests the destinations made at the peer over the phase (probe and drain included), where the peer counts them (the AWS types). */
  /** `connections`: TCP connections the peer accepted over the load (keep-alive reuse), where it counts them. */
  peerRequests?: { requests: number; attempts: number; perThousand: number; connections?: number };
  /** Records written per topic (prefix removed): shows how many times a delivery crossed Kafka. */
  kafkaRecords?: Record<string, number>;
  machine: WindowSummary;
  /**
   * CPU of the pipeline (the four services, Kafka, Postgres; not the receiver or the load generator),
   * percent of one core, and per delivered request: what throughput costs, less sensitive to other
   * work on the machine than the rate itself.
   */
  efficiency: { pipelineCpuPct: number; cpuMsPerDelivery: number };
  series: SeriesPoint[];
  profiles: ProfileSummary[];
  /** With --pg-statements: Postgres's most expensive statements over the window. */
  pgStatements?: PgStatements;
  /** The bare ceiling measured just before this phase's load. */
  ceilingNear: CeilingResult;
  /** deliveredPerSec / ceilingNear. */
  ceilingRatio: number;
  notes: string[];
}

export interface Target {
  target: string;
  measured: string;
  met: boolean | null;
}

export interface RunResult {
  meta: {
    date: string;
    label: string;
    mode: 'quick' | 'full';
    /** The four services with Kafka and Postgres (stack), or embedded mode's one process (--embedded); absent before 2026-11-26: stack. */
    deployment?: 'stack' | 'embedded';
    /** Services ran under --cpu-prof: slower, and RSS includes the profiler's samples. */
    profiled?: boolean;
    /** Where hanging destinations listen: another loopback address (separate) or the healthy ones' origin (shared). */
    hangOrigin?: string;
    /** The services ran as built JavaScript (npm run build, as production) or as TypeScript sources. */
    services?: 'built' | 'source';
    command: string;
    git: string;
    node: string;
    cpu: string;
    cores: number;
    memGb: number;
    load1Before: number;
    load1After: number;
    wallS: number;
    logLevel: string;
    serviceEnv: Record<string, string>;
    /** Absent in results written before the option existed. */
    nodeFlags?: string[];
    /** Seconds of single's load before the first phase, unmeasured (absent in results before 2026-11-25). */
    brokerWarmupS?: number;
    /** The warm-up's 300/s part, run until the broker's compilers were quiet (absent before 2026-11-29). */
    brokerSettle?: BrokerSettle | null;
    /** Pairs of hanging's phases run (--hanging-pairs; absent in results before 2026-11-25: one). */
    hangingPairs?: number;
  };
  ceiling: { start: CeilingResult | null; end: CeilingResult | null };
  phases: PhaseResult[];
  derived: {
    maxRatePerSec: number | null;
    latencyRatePerSec: number | null;
    /** The keep ratio: the mean of hangingPairRatios. */
    hangingHealthyRatio: number | null;
    /** hanging ÷ healthy per pair of phases, in run order (absent in results before 2026-11-25). */
    hangingPairRatios?: number[];
    /** Type phases that could not run (their peer did not start, ...), with the reason. */
    failedPhases?: string[];
  };
  targets: Target[];
  /**
   * Embedded mode's default scenarios (idle, rate300), run by --baseline after the stack's: that
   * run's own result (meta, ceilings, phases, targets). Absent in other runs and older baselines.
   */
  embedded?: RunResult;
}

/**
 * A stack run's result with an embedded run's beside it (what --baseline records). Refuses an
 * embedded result that is not one, and nests one level only.
 */
export function withEmbedded(stack: RunResult, embedded: RunResult): RunResult {
  if ((stack.meta.deployment ?? 'stack') !== 'stack') throw new Error(`${stack.meta.label} is not a stack run`);
  if (embedded.meta.deployment !== 'embedded') throw new Error(`${embedded.meta.label} is not an embedded run`);
  const { embedded: _nested, ...own } = embedded;
  return { ...stack, embedded: own };
}

/** Every target of a result: its own, then its embedded run's. */
export const allTargets = (r: RunResult): Target[] => [...r.targets, ...(r.embedded?.targets ?? [])];

/** A results JSON the runner wrote (bench/runs/*.json, bench/results/baseline.json). */
export const readRunResult = (file: string): RunResult => JSON.parse(readFileSync(file, 'utf8')) as RunResult;

/** The broker warm-up's second part: how long it ran at the moderate rate, and its compilers' last 5 s. */
export interface BrokerSettle {
  seconds: number;
  jitMsPerS: number;
  quiet: boolean;
}

function settleText(s: BrokerSettle | null | undefined): string {
  if (!s) return '';
  const end = s.quiet ? `its compilers were quiet (${s.jitMsPerS} ms/s)` : `**its compilers still spent ${s.jitMsPerS} ms/s**`;
  return `, then ${s.seconds} s at ${MODERATE_RATE} events/s, when ${end}`;
}

const n0 = (x: number | null) => (x === null ? '–' : Math.round(x).toLocaleString('en-US'));
const ms = (x: number) => (x >= 100 ? n0(x) : x.toFixed(1));
const pct = (x: number) => `${(x * 100).toFixed(0)}%`;

/**
 * A phase whose bare ceiling, measured just before it, fell under this share of the run's median
 * ceiling ran on a slower machine (other work, a throttled host): its rates read low and its CPU
 * per delivery high. Five of the thirteen full runs recorded in November 2026 had such a phase.
 */
export const SLOW_CEILING_SHARE = 0.8;

/** The run's median bare ceiling (start, end and before each phase) and the phases measured under SLOW_CEILING_SHARE of it. */
export function slowPhases(r: Pick<RunResult, 'ceiling' | 'phases'>): { median: number; slow: PhaseResult[] } {
  const rates = [r.ceiling.start, r.ceiling.end, ...r.phases.map((p) => p.ceilingNear)]
    .filter((c): c is CeilingResult => c !== null)
    .map((c) => c.ratePerSec)
    .sort((a, b) => a - b);
  const mid = rates.length >> 1;
  const median = rates.length % 2 ? (rates[mid] as number) : ((rates[mid - 1] as number) + (rates[mid] as number)) / 2;
  return { median, slow: r.phases.filter((p) => p.ceilingNear.ratePerSec < SLOW_CEILING_SHARE * median) };
}

/** One sentence naming the phases that ran on a slower machine, or null when none did. */
export function slowPhasesNote(r: Pick<RunResult, 'ceiling' | 'phases'>): string | null {
  const { median, slow } = slowPhases(r);
  if (!slow.length) return null;
  const names = slow.map((p) => `${p.scenario}${p.phase === 'main' ? '' : ` / ${p.phase}`} (${n0(p.ceilingNear.ratePerSec)})`);
  return (
    `The machine was slower before ${names.join(', ')}: bare ceiling under ${pct(SLOW_CEILING_SHARE)} of the run's median of ` +
    `${n0(median)} requests/s. Their ÷ ceiling still compares; their rates and CPU per delivery do not: rerun before reading those.`
  );
}

/**
 * The share of the bare ceiling once set as the throughput target. Retired as pass/fail (docs/performance.md,
 * "Targets"); the CPU table still shows the budget it would leave, as a reference.
 */
export const CEILING_SHARE_TARGET = 0.6;

/** Each service's own memory (anonymous RSS) at its peak under full load, MB (docs/performance.md, "Targets"). */
export const SERVICE_ANON_TARGET_MB = 150;

/**
 * The throughput target read as CPU. At CEILING_SHARE_TARGET of the phase's ceiling the machine's
 * cores leave every process together (receiver and load generator included) `budgetMs` of CPU per
 * delivery; beside it what the machine (`machineMs`, all its busy CPU) and each tracked process
 * spent per delivery over the window. A process over the budget on its own cannot reach the target
 * by any change elsewhere.
 */
export function cpuPerDelivery(
  p: Pick<PhaseResult, 'delivery' | 'machine' | 'ceilingNear'>,
  cores: number,
): { budgetMs: number; machineMs: number; procs: Record<string, number> } {
  // CPU percent of one core over deliveries/s: percent ÷ 100 × 1000 ms.
  const perDelivery = (cpuPct: number) => (cpuPct * 10) / Math.max(1, p.delivery.deliveredPerSec);
  return {
    budgetMs: (cores * 1000) / Math.max(1, CEILING_SHARE_TARGET * p.ceilingNear.ratePerSec),
    machineMs: perDelivery(p.machine.systemAvgPct),
    procs: Object.fromEntries(Object.entries(p.machine.procs).map(([name, s]) => [name, perDelivery(s.cpuAvgPct)])),
  };
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** One SVG: delivered/s vs the ceiling per phase (bars), then delivered/s and published/s over time per phase. */
export function chartSvg(r: RunResult): string {
  const W = 900;
  const barH = 22;
  const left = 230;
  const phases = r.phases;
  const barsTop = 50;
  const maxBar = Math.max(1, ...phases.flatMap((p) => [p.ceilingNear.ratePerSec, p.delivery.deliveredPerSec]));
  const scale = (v: number) => ((W - left - 240) * v) / maxBar;
  const out: string[] = [];
  let y = barsTop;
  out.push(
    `<text x="20" y="28" font-size="16" font-weight="bold">Switchyard benchmark ${esc(r.meta.label)} (${r.meta.mode}): deliveries/s vs the bare ceiling</text>`,
  );
  const bar = (label: string, v: number, color: string, note: string, h: number) => {
    if (label) out.push(`<text x="${left - 8}" y="${y + 13}" text-anchor="end" font-size="12">${esc(label)}</text>`);
    out.push(`<rect x="${left}" y="${y}" width="${Math.max(1, scale(v)).toFixed(1)}" height="${h - 3}" fill="${color}"/>`);
    out.push(`<text x="${left + scale(v) + 6}" y="${y + h - 6}" font-size="11">${esc(`${n0(v)}/s ${note}`)}</text>`);
    y += h;
  };
  for (const p of phases) {
    bar(
      `${p.scenario}${p.phase === 'main' ? '' : ` / ${p.phase}`}`,
      p.delivery.deliveredPerSec,
      isHangingPhase(p.phase) ? '#e57373' : '#4c8bf5',
      `delivered (${pct(p.ceilingRatio)} of ceiling)`,
      barH,
    );
    bar('', p.ceilingNear.ratePerSec, '#bdbdbd', 'bare ceiling just before', barH - 6);
    y += 6;
  }
  y += 20;
  // Time series panels, two per row.
  const panelW = (W - 60) / 2;
  const panelH = 150;
  phases.forEach((p, i) => {
    const px = 20 + (i % 2) * (panelW + 20);
    const py = y + Math.floor(i / 2) * (panelH + 45);
    const pts = p.series;
    const maxS = Math.max(1, ...pts.map((q) => q.s));
    const maxV = Math.max(1, ...pts.map((q) => Math.max(q.published * p.delivery.healthyPerEvent, q.delivered, q.attempts)));
    const sx = (s: number) => px + 40 + ((panelW - 50) * s) / maxS;
    const sy = (v: number) => py + 20 + panelH - 30 - ((panelH - 30) * v) / maxV;
    out.push(`<text x="${px}" y="${py + 12}" font-size="12" font-weight="bold">${esc(`${p.scenario} / ${p.phase}`)}</text>`);
    out.push(`<rect x="${px + 40}" y="${py + 20}" width="${panelW - 50}" height="${panelH - 30}" fill="none" stroke="#ccc"/>`);
    out.push(`<text x="${px + 36}" y="${py + 28}" font-size="10" text-anchor="end">${n0(maxV)}</text>`);
    out.push(`<text x="${px + 36}" y="${py + panelH - 10}" font-size="10" text-anchor="end">0</text>`);
    out.push(`<text x="${px + panelW - 10}" y="${py + panelH + 4}" font-size="10" text-anchor="end">${maxS} s</text>`);
    const line = (f: (q: SeriesPoint) => number, color: string, dash = '') =>
      out.push(
        `<polyline fill="none" stroke="${color}" stroke-width="1.5"${dash ? ` stroke-dasharray="${dash}"` : ''} points="${pts
          .map((q) => `${sx(q.s).toFixed(1)},${sy(f(q)).toFixed(1)}`)
          .join(' ')}"/>`,
      );
    line((q) => q.published * p.delivery.healthyPerEvent, '#9e9e9e', '4 3');
    line((q) => q.delivered, '#4c8bf5');
    line((q) => q.attempts, '#43a047', '2 2');
    const warm = sx(p.warmupS);
    out.push(`<line x1="${warm}" x2="${warm}" y1="${py + 20}" y2="${py + panelH - 10}" stroke="#f9a825" stroke-dasharray="3 3"/>`);
  });
  const rows = Math.ceil(phases.length / 2);
  const legendY = y + rows * (panelH + 45);
  out.push(
    `<text x="20" y="${legendY}" font-size="11"><tspan fill="#9e9e9e">- - healthy deliveries published/s</tspan>   <tspan fill="#4c8bf5">— delivered/s</tspan>   <tspan fill="#43a047">·· attempts stored/s</tspan>   <tspan fill="#f9a825">| end of warm-up</tspan></text>`,
  );
  const H = legendY + 20;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${out.join('\n')}\n</svg>\n`;
}

/** One row per phase, one column per process; `cell` renders a process's figure ('' where it has none). */
function phaseTable(r: RunResult, names: string[], cell: (s: ProcSummary | undefined) => string | number): string[] {
  return [
    `| scenario | ${names.join(' | ')} |`,
    `|---|${names.map(() => '---:').join('|')}|`,
    ...r.phases.map((p) => `| ${p.scenario} / ${p.phase} | ${names.map((n) => cell(p.machine.procs[n])).join(' | ')} |`),
  ];
}

export function markdown(r: RunResult, svgName: string): string {
  const m = r.meta;
  const L: string[] = [];
  L.push(`# Switchyard benchmark: ${m.label}`);
  L.push('');
  L.push(
    `${m.mode === 'quick' ? '**Quick mode (smoke run, short phases): figures are indicative only.**' : 'Full run.'}${m.profiled ? ' **Services ran under `--cpu-prof`: throughput is lower and RSS includes the profiler.**' : ''} ${m.date}, commit \`${m.git}\`, Node ${m.node}, ${m.cpu} (${m.cores} cores), ${m.memGb} GB. ` +
      `Load average ${m.load1Before} before, ${m.load1After} after; ${Math.round(m.wallS / 60)} min wall. Command: \`${m.command}\`. ` +
      `Services ran as ${m.services === 'built' ? 'built JavaScript (`npm run build`, as production images run them)' : 'TypeScript sources (type stripping at load)'}. ` +
      `${m.deployment === 'embedded' ? '**Embedded mode**: every service in one process on the embedded log and PGlite (`--embedded`). ' : ''}Hanging destinations on ${m.hangOrigin === 'shared' ? 'the same origin as the healthy ones' : 'their own origin (127.0.0.2)'}. Services log at \`${m.logLevel}\`${
        Object.keys(m.serviceEnv).length
          ? `, with ${Object.entries(m.serviceEnv)
              .map(([k, v]) => `${k}=${v}`)
              .join(', ')}`
          : ''
      }${m.nodeFlags?.length ? `; node flags on each service's command line: ${m.nodeFlags.map((f) => `\`${f}\``).join(' ')}` : ''}.`,
  );
  const slowNote = slowPhasesNote(r);
  if (slowNote) L.push('', `**${slowNote}**`);
  L.push('');
  L.push(`![chart](${svgName})`);
  L.push('');
  L.push('## Targets');
  L.push('');
  L.push('| target | measured | met |');
  L.push('|---|---|---|');
  L.push(...targetRows(allTargets(r)));
  if (r.embedded) L.push('', "The `embedded` rows are from embedded mode's run after the stack's ([Embedded mode](#embedded-mode)).");
  L.push('');
  L.push('## Bare ceiling');
  L.push('');
  for (const [k, c] of [
    ['start', r.ceiling.start],
    ['end', r.ceiling.end],
  ] as const) {
    if (c)
      L.push(
        `- ${k}: ${n0(c.ratePerSec)} requests/s over ${c.seconds} s (${c.concurrency} connections; latency p50 ${ms(c.latencyMs.p50)} ms, p99 ${ms(c.latencyMs.p99)} ms; ${c.errors} errors)`,
      );
  }
  for (const p of r.phases) {
    const c = p.ceilingNear;
    L.push(`- just before ${p.scenario} / ${p.phase}: ${n0(c.ratePerSec)} requests/s over ${c.seconds} s (p99 ${ms(c.latencyMs.p99)} ms)`);
  }
  L.push('');
  L.push(
    'Each phase is divided by the ceiling measured just before it (same receiver, same machine, a minute apart at most), so the ratio stays comparable when other work on the machine comes and goes; the spread of the ceilings above shows how much it did.',
  );
  L.push('');
  L.push('## Throughput and latency');
  L.push('');
  L.push(
    '| scenario | via | target rate | published/s | delivered/s | ÷ ceiling | attempts stored/s | per destination/s | pipeline CPU ms / delivery | publish→receive p50 / p90 / p99 / max ms | publish API p50 / p99 / max ms | missing | dup |',
  );
  L.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|');
  for (const p of r.phases) {
    const d = p.delivery;
    L.push(
      `| ${p.scenario}${p.phase === 'main' ? '' : ` / ${p.phase}`} | ${p.via} | ${p.targetRate === null ? 'max' : n0(p.targetRate)} | ${n0(p.publish.acceptedPerSec)} | ${n0(d.deliveredPerSec)} | ${pct(p.ceilingRatio)} | ${n0(d.attemptsPerSec)} | ${d.perDestinationPerSec.toFixed(1)} | ${p.efficiency.cpuMsPerDelivery.toFixed(2)} | ${ms(d.latencyMs.p50)} / ${ms(d.latencyMs.p90)} / ${ms(d.latencyMs.p99)} / ${ms(d.latencyMs.max)} | ${ms(p.publish.latencyMs.p50)} / ${ms(p.publish.latencyMs.p99)} / ${ms(p.publish.latencyMs.max)} | ${n0(d.missing)} | ${n0(d.duplicates)} |`,
    );
  }
  L.push('');
  L.push(
    'Published/s, delivered/s and attempts/s are averages over the measurement window (after the warm-up); delivered counts deliveries to healthy destinations (fan-out multiplies it). ' +
      '"max" phases publish as fast as the gateway accepts while fewer than the cap of deliveries are outstanding, so their latency is mostly queueing inside that cap; the latency target is read from the fixed-rate phase. ' +
      '"missing" counts healthy deliveries that had not arrived when the drain ended. ' +
      '"pipeline CPU ms / delivery" is the CPU of the four services, Kafka and Postgres over the window divided by the deliveries: the cost of one delivery, which moves less than the rates when other work competes for the machine.',
  );
  L.push('');
  L.push('## Processes (CPU % of one core, average over the window · RSS MB at rest → max under load)');
  L.push('');
  const names = [...new Set(r.phases.flatMap((p) => Object.keys(p.machine.procs)))];
  L.push(`| scenario | ${names.join(' | ')} | machine busy | others | load1 start→end |`);
  L.push(`|---|${names.map(() => '---:').join('|')}|---:|---:|---|`);
  for (const p of r.phases) {
    const cells = names.map((n) => {
      const s = p.machine.procs[n];
      return s ? `${s.cpuAvgPct}% · ${Math.round(s.rssStartMb)}→${Math.round(s.rssMaxMb)}` : '';
    });
    L.push(
      `| ${p.scenario} / ${p.phase} | ${cells.join(' | ')} | ${p.machine.systemAvgPct}% | ${p.machine.otherAvgPct}% | ${p.machine.load1Start} → ${p.machine.load1End} |`,
    );
  }
  L.push('');
  L.push(
    '"machine busy" is all CPU in use on the machine (200% = both cores); "others" is the part not used by any process of the benchmark (other work on the machine). ' +
      '`bench` is the runner itself: load generator, bare ceiling loop and monitoring.',
  );
  L.push('');
  if (r.phases.some((p) => Object.values(p.machine.procs).some((s) => s.rssAtMax !== undefined))) {
    L.push('## Memory at the highest sample (RSS MB = anonymous + file-backed)');
    L.push('');
    L.push(
      ...phaseTable(r, names, (s) =>
        s?.rssAtMax ? `${Math.round(s.rssMaxMb)} = ${Math.round(s.rssAtMax.anonMb)} + ${Math.round(s.rssAtMax.fileMb)}` : '',
      ),
    );
    L.push('');
    L.push(
      '"anonymous" is the process\'s own memory (V8\'s heap, buffers, the C heap, stacks); "file-backed" is resident pages of mapped files, for a Node service mostly the node binary\'s code, ' +
        'which the page cache holds once for all the processes running it. The memory target counts the anonymous part. ' +
        "Postgres's figures are sums over its processes, and the rest of its RSS is shared memory (its buffers), counted once per process that touched it.",
    );
    L.push('');
  }
  if (r.phases.some((p) => Object.values(p.machine.procs).some((s) => s.waitMsPerS !== undefined))) {
    L.push('## Waiting for a CPU (run-queue wait of all its threads, ms per second · average µs per wake-up · wake-ups per second)');
    L.push('');
    L.push(
      ...phaseTable(r, names, (s) => {
        if (s?.waitMsPerS === undefined) return '';
        const cell = `${Math.round(s.waitMsPerS)} · ${s.waitUsPerRun ?? 0}`;
        return s.runsPerS === undefined ? cell : `${cell} · ${s.runsPerS.toLocaleString('en-US')}`;
      }),
    );
    L.push('');
    L.push(
      "From each thread's `/proc/PID/task/TID/schedstat`: the time it was ready to run while every core was taken. " +
        'Every process here shares the same cores, so a hop that waits adds its wait to publish→receive without spending CPU of its own; ' +
        '1,000 ms per second is one thread always waiting. Wake-ups count every time one of its threads was put on a CPU (results before 2026-11-24 have only the first two figures).',
    );
    L.push('');
  }
  const jitProcs = names.filter((n) => r.phases.some((p) => (p.machine.procs[n]?.jitMsPerS ?? 0) > 0));
  if (jitProcs.length || m.brokerWarmupS !== undefined) {
    L.push('## JIT compilation (CPU of JIT compiler threads, ms per second of the window)');
    L.push('');
    if (jitProcs.length) {
      L.push(...phaseTable(r, jitProcs, (s) => s?.jitMsPerS ?? ''));
      L.push('');
    }
    L.push(
      "HotSpot's C1 and C2 compiler threads, read by name from `/proc/PID/task/TID/comm`: Kafka's broker compiling its request paths. " +
        'The services start afresh for every phase and warm up within its first seconds; the broker runs through the whole run and a cold one compiles its request paths under load, the paths of a fixed rate apart from those of full speed. ' +
        (m.brokerWarmupS
          ? `Before the first phase ${m.brokerWarmupS} s of single's load ran through a deployment of its own, unmeasured (\`--broker-warmup\`)${settleText(m.brokerSettle)}.`
          : '**No broker warm-up in this run: the first phase measured a cold broker.**'),
    );
    L.push('');
  }
  const maxRate = r.phases.filter((p) => p.targetRate === null);
  if (maxRate.length) {
    L.push(`## CPU per delivery (ms of CPU per delivery, full-speed phases)`);
    L.push('');
    L.push(`| scenario | delivered/s | budget at ${pct(CEILING_SHARE_TARGET)} of the ceiling | machine | ${names.join(' | ')} |`);
    L.push(`|---|---:|---:|---:|${names.map(() => '---:').join('|')}|`);
    for (const p of maxRate) {
      const c = cpuPerDelivery(p, m.cores);
      const cell = (x: number | undefined) => (x === undefined ? '' : x > c.budgetMs ? `**${x.toFixed(3)}**` : x.toFixed(3));
      L.push(
        `| ${p.scenario} / ${p.phase} | ${n0(p.delivery.deliveredPerSec)} | ${c.budgetMs.toFixed(3)} | ${cell(c.machineMs)} | ${names.map((n) => cell(c.procs[n])).join(' | ')} |`,
      );
    }
    L.push('');
    L.push(
      `At ${pct(CEILING_SHARE_TARGET)} of the ceiling measured before the phase, the machine's ${m.cores} cores leave every process together (receiver and load generator included) the budget's CPU per delivery. ` +
        "Each process's average CPU over the window is divided by the deliveries per second; figures over the budget are in bold: a process over it on its own keeps that share out of reach whatever the others do. " +
        'The share is reported, not a target (docs/performance.md).',
    );
    L.push('');
  }
  const withNotes = r.phases.filter((p) => p.notes.length || p.publish.firstErrors.length || p.delivery.verify.failed);
  if (withNotes.length) {
    L.push('## Notes');
    L.push('');
    for (const p of withNotes) {
      for (const n of p.notes) L.push(`- ${p.scenario} / ${p.phase}: ${n}`);
      for (const e of p.publish.firstErrors) L.push(`- ${p.scenario} / ${p.phase}: publish error: \`${e}\``);
      for (const e of p.delivery.verify.errors) L.push(`- ${p.scenario} / ${p.phase}: signature check failed: \`${e}\``);
    }
    L.push('');
  }
  L.push('## Signatures and storage');
  L.push('');
  L.push('| scenario | signatures checked / ok | attempts rows (by status) | events rows | Kafka records written per topic | drain s |');
  L.push('|---|---|---|---:|---|---:|');
  for (const p of r.phases) {
    const v = p.delivery.verify;
    L.push(
      `| ${p.scenario} / ${p.phase} | ${v.checked} / ${v.ok} | ${n0(p.stored.attempts)} (${Object.entries(p.stored.attemptsByStatus)
        .map(([k, c]) => `${k} ${n0(c)}`)
        .join(', ')}) | ${n0(p.stored.events)} | ${Object.entries(p.kafkaRecords ?? {})
        .map(([k, c]) => `${k} ${n0(c)}`)
        .join(', ')} | ${p.delivery.drainS} |`,
    );
  }
  L.push('');
  const profiled = r.phases.filter((p) => p.profiles.length);
  if (profiled.length) {
    L.push('## CPU profiles');
    L.push('');
    L.push('Self time per area and per function, from `node --cpu-prof` on each service (the profiler itself costs some throughput).');
    L.push('');
    for (const p of profiled) {
      L.push(`### ${p.scenario} / ${p.phase}`);
      L.push('');
      for (const s of p.profiles) {
        L.push(profileMarkdown(s));
        L.push('');
      }
    }
  }
  const withStatements = r.phases.filter((p) => p.pgStatements);
  if (withStatements.length) {
    L.push('## Postgres statements');
    L.push('');
    L.push(
      "From `pg_stat_statements` (`--pg-statements`), emptied as the measurement window opens and read as it closes; the runner's own queries left out. Execution time is the server's, waits included.",
    );
    L.push('');
    for (const p of withStatements) {
      L.push(`### ${p.scenario} / ${p.phase}`);
      L.push('');
      L.push(statementsMarkdown(p.pgStatements as PgStatements));
      L.push('');
    }
  }
  // The services of the stack: every tracked process but the stores, the receiver and the runner.
  const services = names.filter((n) => !['kafka', 'postgres', 'receiver', 'bench', 'embedded'].includes(n));
  const moderate = moderateMarkdown(r.phases, m.deployment ?? 'stack', services);
  for (const table of [moderate, typesTable(r.phases), sendersTable(r.phases), scheduledTable(r.phases)]) if (table) L.push('', table);
  if (r.derived.failedPhases?.length) L.push('', `Not run: ${r.derived.failedPhases.join('; ')}.`);
  if (r.embedded) L.push('', embeddedMarkdown(r.embedded, r.phases));
  return `${L.join('\n')}\n`;
}

/**
 * The scenarios both deployments ran, stack and embedded in adjacent columns: a change that costs one
 * mode throughput or CPU shows in the baseline beside the other (full speed included), not only in a
 * section of its own. Null when no scenario was run by both.
 */
export function sideBySideMarkdown(stack: readonly PhaseResult[], embedded: readonly PhaseResult[]): string | null {
  const key = (p: PhaseResult) => `${p.scenario} / ${p.phase}`;
  const byKey = new Map(stack.map((p) => [key(p), p]));
  const rows: string[] = [];
  for (const e of embedded) {
    const s = byKey.get(key(e));
    if (!s) continue;
    const idle = e.targetRate === 0;
    const cpu = (p: PhaseResult) => (idle ? '–' : p.efficiency.cpuMsPerDelivery.toFixed(2));
    const p99 = (p: PhaseResult) => (idle ? '–' : ms(p.delivery.latencyMs.p99));
    rows.push(
      `| ${key(e)} | ${e.targetRate === null ? 'max' : n0(e.targetRate)} | ${n0(s.delivery.deliveredPerSec)} · ${n0(e.delivery.deliveredPerSec)} | ` +
        `${cpu(s)} · ${cpu(e)} | ${p99(s)} · ${p99(e)} |`,
    );
  }
  if (!rows.length) return null;
  return [
    '### Stack and embedded side by side',
    '',
    '| phase | target rate | delivered/s (stack · embedded) | pipeline CPU ms / delivery | publish→receive p99 ms |',
    '|---|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

function targetRows(targets: readonly Target[]): string[] {
  return targets.map((t) => `| ${t.target} | ${t.measured} | ${t.met === null ? 'reported' : t.met ? 'yes' : '**no**'} |`);
}

/**
 * The section of a baseline for its embedded run: how it ran, its targets (the memory goals among
 * them), its phases, and the moderate-load and idle tables with its RSS against the goals.
 */
export function embeddedMarkdown(e: RunResult, stackPhases: readonly PhaseResult[] = []): string {
  const m = e.meta;
  const L: string[] = ['## Embedded mode', ''];
  const pairs = sideBySideMarkdown(stackPhases, e.phases);
  if (pairs) L.push(pairs, '');
  L.push(
    "`npm start`'s one process (every service on the embedded log and PGlite; no Kafka, no Postgres), its default scenarios run after the stack's " +
      `with the stack stopped (${m.mode === 'quick' ? 'quick mode' : 'full run'}, ${m.date}, ${Math.round(m.wallS / 60)} min wall; ` +
      `load average ${m.load1Before} before, ${m.load1After} after; services as ${m.services === 'built' ? 'built JavaScript' : 'TypeScript sources'}; \`${m.command}\`). ` +
      "Its peak RSS is read from the start of each phase's sampling, so the start-up does not count.",
    '',
    '| target | measured | met |',
    '|---|---|---|',
    ...targetRows(e.targets),
    '',
    '| phase | target rate | delivered/s | pipeline CPU ms / delivery | publish→receive p50 / p99 / max ms | RSS MB at rest → max · peak (VmHWM) | missing | dup |',
    '|---|---:|---:|---:|---|---|---:|---:|',
  );
  for (const p of e.phases) {
    const d = p.delivery;
    const s = p.machine.procs.embedded;
    const rss = s ? `${Math.round(s.rssStartMb)} → ${Math.round(s.rssMaxMb)} · ${Math.round(s.hwmMb)}` : '';
    // Idle delivers nothing: no CPU per delivery, no latency.
    const idle = p.targetRate === 0;
    L.push(
      `| ${p.scenario} / ${p.phase} | ${p.targetRate === null ? 'max' : n0(p.targetRate)} | ${n0(d.deliveredPerSec)} | ${idle ? '–' : p.efficiency.cpuMsPerDelivery.toFixed(2)} | ` +
        `${idle ? '–' : `${ms(d.latencyMs.p50)} / ${ms(d.latencyMs.p99)} / ${ms(d.latencyMs.max)}`} | ${rss} | ${n0(d.missing)} | ${n0(d.duplicates)} |`,
    );
  }
  L.push('');
  const moderate = moderateMarkdown(e.phases, 'embedded', []);
  if (moderate) L.push(moderate.replace(/^## /, '### '));
  const notes = e.phases.flatMap((p) => p.notes.map((n) => `- ${p.scenario} / ${p.phase}: ${n}`));
  if (notes.length) L.push(...notes, '');
  return L.join('\n');
}
