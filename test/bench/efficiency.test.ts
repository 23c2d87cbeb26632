// The moderate-load and idle figures: targets per deployment, the summary's section, the
// embedded process's memory, and the metrics sum the runner reads embedded mode's stored attempts
// with; built from a recorded run's phase with its figures changed.
import t from 'tap';
import { embeddedMemory, idleJudged, moderateMarkdown, moderateTargets, pipelineProcesses, sumMetric } from '../../bench/lib/efficiency.ts';
import { markdown, type PhaseResult } from '../../bench/lib/report.ts';
import type { ProcSummary } from '../../bench/lib/proc.ts';
import { recorded } from './recorded.ts';

const SERVICES = ['gateway', 'router', 'sender', 'attempts'];
const run = recorded('stack-slow-first-phases');
const base = run.phases[0] as PhaseResult;
const proc = (cpuAvgPct: number, extra: Partial<ProcSummary> = {}): ProcSummary => ({
  ...(base.machine.procs.gateway as ProcSummary),
  cpuAvgPct,
  ...extra,
});
const phase = (
  scenario: string,
  procs: Record<string, ProcSummary>,
  o: { perSec?: number; cpuMs?: number; p99?: number } = {},
): PhaseResult => ({
  ...base,
  scenario,
  phase: 'main',
  targetRate: scenario === 'idle' ? 0 : 300,
  delivery: {
    ...base.delivery,
    deliveredPerSec: o.perSec ?? 300,
    latencyMs: { ...base.delivery.latencyMs, p50: 9, p99: o.p99 ?? 40, max: 70 },
  },
  efficiency: { pipelineCpuPct: ((o.cpuMs ?? 1.8) * (o.perSec ?? 300)) / 10, cpuMsPerDelivery: o.cpuMs ?? 1.8 },
  machine: { ...base.machine, seconds: 20, load1Start: 1.5, load1End: 1.7, procs },
});

t.test('the pipeline is the services, Kafka and Postgres; embedded mode its one process', async (t) => {
  t.same(pipelineProcesses('stack', SERVICES), [...SERVICES, 'kafka', 'postgres']);
  t.same(pipelineProcesses('embedded', SERVICES), ['embedded']);
  t.same(idleJudged('stack', SERVICES), SERVICES, 'the broker and Postgres are not judged idle');
});

t.test('stack targets: CPU per delivery ≤ 2.0 ms and p99 ≤ 50 ms at 300/s; each idle service under 1%', async (t) => {
  const procs = Object.fromEntries([...SERVICES, 'kafka', 'postgres'].map((n) => [n, proc(10)]));
  const ok = moderateTargets(
    [phase('rate300', procs, { cpuMs: 1.9, p99: 45 }), phase('idle', Object.fromEntries(SERVICES.map((n) => [n, proc(0.4)])))],
    'stack',
    SERVICES,
  );
  t.equal(ok.length, 3);
  t.same(
    ok.map((x) => x.met),
    [true, true, true],
  );
  t.match(ok[0]?.measured, /1\.9 ms .*load1 1\.5 → 1\.7/);
  const bad = moderateTargets(
    [
      phase('rate300', procs, { cpuMs: 2.1, p99: 51 }),
      phase('idle', { ...Object.fromEntries(SERVICES.map((n) => [n, proc(0.4)])), router: proc(3.2), kafka: proc(9) }),
    ],
    'stack',
    SERVICES,
  );
  t.same(
    bad.map((x) => x.met),
    [false, false, false],
  );
  t.match(bad[2]?.measured, /router 3\.2%/);
  t.notMatch(bad[2]?.measured, /kafka/, 'the broker is not judged');
  t.same(moderateTargets([], 'stack', SERVICES), [], 'no such phases, no targets');
});

t.test('embedded targets: 1.5 ms per delivery, and its memory judged against the embedded memory goals', async (t) => {
  const idle = phase('idle', { embedded: proc(0.6, { rssMaxMb: 240, hwmMb: 260 }) });
  const loaded = phase('rate300', { embedded: proc(45, { rssMaxMb: 300, hwmMb: 320 }) }, { cpuMs: 1.6 });
  const targets = moderateTargets([idle, loaded], 'embedded', SERVICES);
  t.same(
    targets.map((x) => x.met),
    [false, true, true, true],
    'CPU missed at 1.6 ms, p99 met, idle met, memory met (idle 240 ≤ 250, peak 320 ≤ 500)',
  );
  t.same(embeddedMemory([idle, loaded]), { idleMb: 240, peakMb: 320 });
  t.same(embeddedMemory([]), { idleMb: null, peakMb: null });
  t.match(targets.at(-1)?.measured, 'idle 240 MB, peak 320 MB');
  const heavy = phase('idle', { embedded: proc(0.6, { rssMaxMb: 260, hwmMb: 270 }) });
  t.equal(moderateTargets([heavy, loaded], 'embedded', SERVICES).at(-1)?.met, false, 'idle 260 MB misses the goal');
  const idleOnly = moderateTargets([idle], 'embedded', SERVICES).at(-1);
  t.equal(idleOnly?.met, null, 'without a rate300 phase the peak is not judged');
  t.match(idleOnly?.measured, 'idle 240 MB, peak not measured');
});

t.test('the summary gives per-process CPU per delivery at 300/s and idle CPU with wake-ups', async (t) => {
  const procs = Object.fromEntries([...SERVICES, 'kafka', 'postgres'].map((n) => [n, proc(15, { runsPerS: 1234 })]));
  const md = moderateMarkdown([phase('rate300', procs), phase('idle', procs)], 'stack', SERVICES);
  t.match(md, /## Moderate load and idle/);
  t.match(
    md,
    /\| rate300 \/ main \| 300 \| 300 \| 54 \| 1\.800 \| 0\.500 \| 0\.500 \| 0\.500 \| 0\.500 \| 0\.500 \| 0\.500 \| 9 \/ 40 \/ 70 \| 1\.5 → 1\.7 \|/,
  );
  t.match(md, /\| idle \/ main \| 15 · 1,234 · \d+ \|/);
  t.equal(moderateMarkdown([base], 'stack', SERVICES), '', 'no such phase, no section');
  t.match(markdown({ ...run, phases: [phase('rate300', procs)] }, 'x.svg'), /## Moderate load and idle/);
  t.match(
    markdown({ ...run, meta: { ...run.meta, deployment: 'embedded' }, phases: [phase('idle', { embedded: proc(0.5) })] }, 'x.svg'),
    /\*\*Embedded mode\*\*[\s\S]*Embedded RSS: idle/,
  );
});

t.test('sumMetric adds the samples whose labels match', async (t) => {
  const text = [
    '# HELP switchyard_records_consumed_total Records handled.',
    '# TYPE switchyard_records_consumed_total counter',
    'switchyard_records_consumed_total{group="attempts",topic="attempts"} 120',
    'switchyard_records_consumed_total{group="attempts-routed",topic="routed"} 40',
    'switchyard_records_consumed_total{group="attempts",topic="other"} 3',
    'switchyard_records_consumed_totals{group="attempts"} 1000',
    'switchyard_up 1',
  ].join('\n');
  t.equal(sumMetric(text, 'switchyard_records_consumed_total', { group: 'attempts' }), 123, 'attempts-routed is another group');
  t.equal(sumMetric(text, 'switchyard_records_consumed_total'), 163);
  t.equal(sumMetric(text, 'switchyard_up'), 1);
  t.equal(sumMetric('', 'switchyard_up'), 0);
});
