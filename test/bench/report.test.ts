// The benchmark report's flag for phases run on a slower machine, against two recorded full runs:
// one whose first phases ran while the host was slow, and its rerun straight after, which did not.
// And the summary names the node flags the services ran with, and reads the throughput target as CPU
// per delivery. A baseline with embedded mode's run merged in (--baseline) renders its section, its
// memory figures and targets, through --render too; one without renders as before.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '@switchyard/shared/testing/index.ts';
import { moderateTargets } from '../../bench/lib/efficiency.ts';
import {
  CEILING_SHARE_TARGET,
  cpuPerDelivery,
  markdown,
  type PhaseResult,
  type RunResult,
  readRunResult,
  SLOW_CEILING_SHARE,
  slowPhases,
  slowPhasesNote,
  sideBySideMarkdown,
  withEmbedded,
} from '../../bench/lib/report.ts';
import { EMBEDDED_DEFAULT, parseScenarios } from '../../bench/lib/scenarios.ts';
import type { ProcSummary } from '../../bench/lib/proc.ts';
import { recorded } from './recorded.ts';

/** A recorded run as if every process's summary had carried other figures (`fields` per process and phase index). */
const withProcFields = (run: RunResult, fields: (name: string, phase: number) => Partial<ProcSummary>): RunResult => ({
  ...run,
  phases: run.phases.map((p, i) => ({
    ...p,
    machine: {
      ...p.machine,
      procs: Object.fromEntries(Object.entries(p.machine.procs).map(([n, s]) => [n, { ...s, ...fields(n, i) }])),
    },
  })),
});

t.test('a run whose first phases met a slow host names them, in the summary too', async (t) => {
  const run = recorded('stack-slow-first-phases');
  const { median, slow } = slowPhases(run);
  // Ceilings 16,060-31,786 requests/s; the median of the eight is (25,103 + 28,053) / 2.
  t.equal(Math.round(median), 26_578);
  t.same(
    slow.map((p) => p.scenario),
    ['single', 'tenants'],
  );
  for (const p of slow) t.ok(p.ceilingNear.ratePerSec < SLOW_CEILING_SHARE * median);
  const note = slowPhasesNote(run);
  t.match(note, /slower before single \(16,060\), tenants \(20,447\)/);
  t.match(note, /median of 26,578 requests\/s/);
  t.ok(markdown(run, 'x.svg').includes(`**${note}**`), 'the summary carries the note');
});

t.test('a run on a steady machine carries no note', async (t) => {
  const run = recorded('stack-steady-host');
  t.same(slowPhases(run).slow, []);
  t.equal(slowPhasesNote(run), null);
  t.notMatch(markdown(run, 'x.svg'), /machine was slower/);
});

t.test('one slow ceiling among steady ones is flagged, however the rest spread', async (t) => {
  const ceiling = (ratePerSec: number) => ({ ratePerSec }) as RunResult['phases'][number]['ceilingNear'];
  const phase = (scenario: string, rate: number) =>
    ({ scenario, phase: 'main', ceilingNear: ceiling(rate) }) as unknown as RunResult['phases'][number];
  const run = {
    ceiling: { start: ceiling(30_000), end: null },
    phases: [phase('single', 29_000), phase('tenants', 23_000), phase('fanout', 24_100)],
  };
  // Median of 23,000, 24,100, 29,000, 30,000 is 26,550; 80% of it is 21,240.
  t.same(slowPhases(run).slow, []);
  // Median of the five is 24,100; 80% of it is 19,280.
  run.phases.push(phase('latency', 18_000));
  t.same(
    slowPhases(run).slow.map((p) => p.scenario),
    ['latency'],
  );
});

t.test("the summary names the services' node flags when there were any", async (t) => {
  const run = recorded('stack-steady-host');
  t.notMatch(markdown(run, 'x.svg'), /node flags/, 'none recorded (a run from before the option), none named');
  const flagged: RunResult = { ...run, meta: { ...run.meta, nodeFlags: ['--single-threaded-gc', '--heap-growing-percent=20'] } };
  t.match(markdown(flagged, 'x.svg'), /node flags on each service's command line: `--single-threaded-gc` `--heap-growing-percent=20`\./);
  t.notMatch(markdown({ ...run, meta: { ...run.meta, nodeFlags: [] } }, 'x.svg'), /node flags/, 'an empty list is not named');
});

t.test('the throughput target as CPU per delivery: the budget, and each process against it', async (t) => {
  const run = recorded('stack-cpu-per-delivery');
  const single = run.phases.find((p) => p.scenario === 'single') as RunResult['phases'][number];
  const c = cpuPerDelivery(single, run.meta.cores);
  // 2 cores at 60% of 34,915 requests/s: 2,000 ms / 20,949 deliveries.
  t.equal(CEILING_SHARE_TARGET, 0.6);
  t.equal(c.budgetMs.toFixed(4), '0.0955');
  // The sender's 48.1% of a core over 2,947 deliveries/s.
  t.equal(c.procs.sender?.toFixed(3), '0.163');
  t.equal(c.machineMs.toFixed(3), ((single.machine.systemAvgPct * 10) / single.delivery.deliveredPerSec).toFixed(3));
  const md = markdown(run, 'x.svg');
  t.match(md, /## CPU per delivery \(ms of CPU per delivery, full-speed phases\)/);
  t.match(
    md,
    /\| single \/ main \| 2,947 \| 0\.095 \| \*\*0\.658\*\* \| 0\.077 \| \*\*0\.098\*\* \| \*\*0\.163\*\* \|/,
    'over the budget in bold, under it not',
  );
  t.notMatch(md, /\| latency \/ main \| 737 \|/, 'a fixed-rate phase has no budget row');
});

t.test('a phase under the budget has nothing in bold, and a run of fixed-rate phases only has no budget table', async (t) => {
  const run = recorded('stack-cpu-per-delivery');
  const fast = run.phases.map((p) => ({ ...p, delivery: { ...p.delivery, deliveredPerSec: 100_000 } }));
  const c = cpuPerDelivery(fast[0] as RunResult['phases'][number], run.meta.cores);
  t.ok(c.machineMs < c.budgetMs, 'at 100,000 deliveries/s the whole machine fits the budget');
  const md = markdown({ ...run, phases: fast }, 'x.svg');
  const section = md.slice(md.indexOf('## CPU per delivery'), md.indexOf('## Signatures'));
  const row = section.split('\n').find((l) => l.startsWith('| single / main |'));
  t.ok(row, 'the single phase has its row');
  t.notMatch(row ?? '', /\*\*/, 'nothing over the budget');
  const fixed = run.phases.filter((p) => p.targetRate !== null);
  t.notMatch(markdown({ ...run, phases: fixed }, 'x.svg'), /## CPU per delivery/);
});

t.test('run-queue wait is tabled per process when recorded, and older results render without it', async (t) => {
  const run = recorded('stack-steady-host');
  t.notMatch(markdown(run, 'x.svg'), /Waiting for a CPU/, 'a result from before the measurement has no such table');
  const md = markdown(
    withProcFields(run, () => ({ waitMsPerS: 412.4, waitUsPerRun: 865 })),
    'x.svg',
  );
  t.match(md, /## Waiting for a CPU/);
  t.match(md, /\| single \/ main \| 412 · 865 \|/, "each phase's row carries wait ms/s and µs per wake-up");
  t.match(
    markdown(
      withProcFields(run, () => ({ waitMsPerS: 412.4, waitUsPerRun: 865, runsPerS: 1477 })),
      'x.svg',
    ),
    /\| single \/ main \| 412 · 865 · 1,477 \|/,
    'and wake-ups per second once recorded',
  );
});

t.test("the broker's JIT compilation is tabled when recorded, with the warm-up the run had", async (t) => {
  const run = recorded('stack-steady-host');
  t.notMatch(markdown(run, 'x.svg'), /JIT compilation/, 'a result from before the measurement has no such section');
  const jit = withProcFields(run, (n, i) => ({ jitMsPerS: n === 'kafka' ? 100 + i : 0 }));
  const withJit = (brokerWarmupS: number): RunResult => ({ ...jit, meta: { ...jit.meta, brokerWarmupS } });
  const md = markdown(withJit(30), 'x.svg');
  t.match(md, /## JIT compilation/);
  t.match(md, /\| scenario \| kafka \|\n/, 'only the processes that compiled have a column');
  t.match(md, /\| single \/ main \| 100 \|/, "each phase's row carries its ms per second");
  t.match(md, /Before the first phase 30 s of single's load ran/, 'the warm-up is named');
  t.match(markdown(withJit(0), 'x.svg'), /\*\*No broker warm-up in this run/, 'and its absence is flagged');
  const settled = (quiet: boolean): RunResult => ({
    ...jit,
    meta: { ...jit.meta, brokerWarmupS: 30, brokerSettle: { seconds: 67, jitMsPerS: quiet ? 17.8 : 41.2, quiet } },
  });
  t.match(
    markdown(settled(true), 'x.svg'),
    /30 s of single's load ran .*, then 67 s at 300 events\/s, when its compilers were quiet \(17\.8 ms\/s\)\./,
    'the moderate part and its quiet end are named',
  );
  t.match(markdown(settled(false), 'x.svg'), /\*\*its compilers still spent 41\.2 ms\/s\*\*/, 'a warm-up that ended at its cap is flagged');
});

t.test("each process's highest sample is split into anonymous and file-backed memory when recorded", async (t) => {
  const run = recorded('stack-steady-host');
  t.notMatch(markdown(run, 'x.svg'), /Memory at the highest sample/, 'a result from before the measurement has no such table');
  const md = markdown(
    withProcFields(run, () => ({ rssMaxMb: 171.6, rssAtMax: { anonMb: 121.4, fileMb: 50.2 } })),
    'x.svg',
  );
  t.match(md, /## Memory at the highest sample/);
  t.match(md, /\| single \/ main \| 172 = 121 \+ 50 \|/, "each phase's row carries the peak and its two parts");
});

/**
 * An embedded run as --embedded records it, built from a recorded stack run's latency phase: idle
 * (the process at 231.4 MB) and rate300 (VmHWM 463.2 MB, 1.2 ms of CPU per delivery).
 */
function embeddedRun(): RunResult {
  const run = recorded('stack-warm-broker');
  const base = run.phases.find((p) => p.scenario === 'latency') as PhaseResult;
  const { receiver, bench } = base.machine.procs;
  const proc = (cpuAvgPct: number, rssMaxMb: number, hwmMb: number): ProcSummary => ({
    ...(base.machine.procs.gateway as ProcSummary),
    cpuAvgPct,
    rssStartMb: 180,
    rssMaxMb,
    hwmMb,
  });
  const phase = (scenario: string, rate: number, embedded: ProcSummary, cpuMs: number): PhaseResult => ({
    ...base,
    scenario,
    phase: 'main',
    targetRate: rate,
    delivery: { ...base.delivery, deliveredPerSec: rate, latencyMs: { ...base.delivery.latencyMs, p50: 8, p99: 31, max: 60 } },
    efficiency: { pipelineCpuPct: (cpuMs * rate) / 10, cpuMsPerDelivery: cpuMs },
    machine: { ...base.machine, procs: { embedded, receiver: receiver as ProcSummary, bench: bench as ProcSummary } },
    notes: [],
  });
  const phases = [phase('idle', 0, proc(0.6, 231.4, 240), 0), phase('rate300', 300, proc(35, 402.5, 463.2), 1.2)];
  return {
    ...run,
    meta: { ...run.meta, label: 'embedded', deployment: 'embedded', brokerWarmupS: 0 },
    phases,
    derived: { maxRatePerSec: null, latencyRatePerSec: null, hangingHealthyRatio: null },
    targets: moderateTargets(phases, 'embedded', []),
  };
}

const MEMORY_ROW = '| embedded RSS: idle ≤ 250 MB, peak ≤ 500 MB | idle 231.4 MB, peak 463.2 MB | yes |';

t.test("--baseline's merge: the stack's result with embedded mode's run as its `embedded` section", async (t) => {
  const stack = recorded('stack-warm-broker');
  const embedded = embeddedRun();
  const merged = withEmbedded(stack, embedded);
  t.same(merged.embedded, embedded, 'the embedded run as recorded');
  t.equal(merged.targets, stack.targets, "the stack's own targets unchanged");
  t.same(merged.phases, stack.phases);
  t.same(
    merged.embedded?.targets.map((x) => x.target),
    [
      'embedded: pipeline CPU ≤ 1.5 ms per delivery at 300/s',
      'embedded: p99 publish→receive ≤ 50 ms at 300/s',
      'embedded: an idle process uses < 1% of a core',
      'embedded RSS: idle ≤ 250 MB, peak ≤ 500 MB',
    ],
    'its targets, the memory goals among them',
  );
  t.notOk(withEmbedded(stack, { ...embedded, embedded }).embedded?.embedded, 'one level only');
  t.throws(() => withEmbedded(embedded, embedded), /embedded is not a stack run/);
  t.throws(() => withEmbedded(stack, stack), /is not an embedded run/);
});

t.test('a baseline with an embedded section renders its memory figures and targets', async (t) => {
  const md = markdown(withEmbedded(recorded('stack-warm-broker'), embeddedRun()), 'baseline.svg');
  const targets = md.slice(md.indexOf('## Targets'), md.indexOf('## Bare ceiling'));
  t.match(
    targets,
    /\| healthy destinations keep ≥ 90%[^\n]*\n(\|[^\n]*\n)*\| embedded: pipeline CPU ≤ 1\.5 ms per delivery at 300\/s \| 1\.2 ms/,
    "the stack's targets, then embedded mode's",
  );
  t.ok(targets.includes(MEMORY_ROW), 'the memory goals judged in the summary');
  const section = md.slice(md.indexOf('\n## Embedded mode'));
  t.ok(md.indexOf('## Signatures and storage') < md.indexOf('## Embedded mode'), 'the section comes last');
  t.ok(section.includes(MEMORY_ROW), 'and in its own targets table');
  t.match(section, /\| idle \/ main \| 0 \| 0 \| – \| – \| 180 → 231 · 240 \| 0 \| 0 \|/);
  t.match(section, /\| rate300 \/ main \| 300 \| 300 \| 1\.20 \| 8\.0 \/ 31\.0 \/ 60\.0 \| 180 → 403 · 463 \| 0 \| 0 \|/);
  t.match(section, /### Moderate load and idle \(embedded mode: one process\)/);
  t.match(section, /Embedded RSS: idle 231\.4 MB \(goal ≤ 250\), peak 463\.2 MB \(VmHWM; goal ≤ 500\)\./);
});

t.test('a baseline puts the scenarios both modes ran side by side, full speed among the defaults', async (t) => {
  const stack = recorded('stack-warm-broker');
  const single = stack.phases.find((p) => p.scenario === 'single') as PhaseResult;
  const embeddedSingle: PhaseResult = {
    ...single,
    delivery: { ...single.delivery, deliveredPerSec: 1234 },
    efficiency: { ...single.efficiency, cpuMsPerDelivery: 0.61 },
  };
  const base = embeddedRun();
  const embedded = { ...base, phases: [embeddedSingle, ...base.phases] };
  const md = markdown(withEmbedded(stack, embedded), 'baseline.svg');
  const section = md.slice(md.indexOf('\n## Embedded mode'));
  t.match(section, /### Stack and embedded side by side/);
  const row = section.split('\n').find((l) => l.startsWith('| single / main |')) ?? '';
  t.match(
    row,
    `| ${Math.round(single.delivery.deliveredPerSec).toLocaleString('en-US')} · 1,234 |`,
    "the stack's rate beside embedded mode's",
  );
  t.match(row, `| ${single.efficiency.cpuMsPerDelivery.toFixed(2)} · 0.61 |`, 'and the CPU per delivery');
  t.notOk(section.includes('| rate300 / main | 300 | 300 ·'), 'a phase only one mode ran has no row');
  t.equal(sideBySideMarkdown(stack.phases, base.phases), null, 'nothing in common: no table');
  t.same(parseScenarios(EMBEDDED_DEFAULT).slice(0, 2), ['single', 'tenants'], "embedded mode's defaults run full speed");
});

t.test('a baseline without an embedded section renders as before', async (t) => {
  const run = recorded('stack-warm-broker');
  const plain = markdown(run, 'baseline.svg');
  t.notMatch(plain, /Embedded mode|embedded RSS/);
  const md = markdown(withEmbedded(run, embeddedRun()), 'baseline.svg');
  const embeddedRows = new Set(embeddedRun().targets.map((x) => `| ${x.target} |`));
  const stripped = `${md.slice(0, md.indexOf('\n\n## Embedded mode'))}\n`
    .split('\n')
    .filter((l) => ![...embeddedRows].some((row) => l.startsWith(row)))
    .join('\n')
    .replace("\nThe `embedded` rows are from embedded mode's run after the stack's ([Embedded mode](#embedded-mode)).\n", '');
  t.equal(stripped, plain, 'the section and its target rows are all the merge adds');
});

t.test('--render keeps the embedded section and restates the stack targets only', async (t) => {
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'render-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const run = recorded('stack-warm-broker');
  const embedded = embeddedRun();
  // As recorded before the memory target's restatement: --render rewrites the stack's, not embedded mode's.
  const stale = { target: "each service's RSS ≤ 150 MB at peak", measured: 'old', met: false };
  writeFileSync(join(dir, 'baseline.json'), JSON.stringify({ ...withEmbedded(run, embedded), targets: [...run.targets, stale] }));
  writeFileSync(join(dir, 'old.json'), JSON.stringify(run));
  for (const f of ['baseline.json', 'old.json'])
    execFileSync(process.execPath, [join(ROOT, 'bench/run.ts'), '--render', join(dir, f)], { cwd: ROOT, stdio: 'pipe' });
  const r = readRunResult(join(dir, 'baseline.json'));
  t.same(r.embedded, embedded, 'the embedded run kept as recorded');
  t.notOk(
    r.targets.some((x) => x.measured === 'old'),
    "the stack's targets restated",
  );
  const md = readFileSync(join(dir, 'baseline.md'), 'utf8');
  t.ok(md.includes(MEMORY_ROW));
  t.match(md, /## Embedded mode/);
  t.equal(readFileSync(join(dir, 'old.md'), 'utf8'), markdown(readRunResult(join(dir, 'old.json')), 'old.svg'));
  t.notMatch(readFileSync(join(dir, 'old.md'), 'utf8'), /Embedded mode/, 'an older baseline renders without it');
});
