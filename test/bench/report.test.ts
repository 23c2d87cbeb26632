// The benchmark report's flag for phases run on a slower machine, against two recorded full runs:
// one whose first phases ran while the host was slow, and its rerun straight after, which did not.
// And the summary names the node flags the services ran with, and reads the throughput target as CPU
// per delivery.
import t from 'tap';
import {
  CEILING_SHARE_TARGET,
  cpuPerDelivery,
  markdown,
  type RunResult,
  SLOW_CEILING_SHARE,
  slowPhases,
  slowPhasesNote,
} from '../../bench/lib/report.ts';
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
  const run = recorded('2026-11-23-all-seventh');
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
  const run = recorded('2026-11-23-all-seventh-rerun');
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
  const run = recorded('2026-11-23-all-seventh-rerun');
  t.notMatch(markdown(run, 'x.svg'), /node flags/, 'none recorded (a run from before the option), none named');
  const flagged: RunResult = { ...run, meta: { ...run.meta, nodeFlags: ['--single-threaded-gc', '--heap-growing-percent=20'] } };
  t.match(markdown(flagged, 'x.svg'), /node flags on each service's command line: `--single-threaded-gc` `--heap-growing-percent=20`\./);
  t.notMatch(markdown({ ...run, meta: { ...run.meta, nodeFlags: [] } }, 'x.svg'), /node flags/, 'an empty list is not named');
});

t.test('the throughput target as CPU per delivery: the budget, and each process against it', async (t) => {
  const run = recorded('2026-11-24-all-sixteenth-b');
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
  const run = recorded('2026-11-24-all-sixteenth-b');
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
  const run = recorded('2026-11-23-all-seventh-rerun');
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
  const run = recorded('2026-11-23-all-seventh-rerun');
  t.notMatch(markdown(run, 'x.svg'), /JIT compilation/, 'a result from before the measurement has no such section');
  const jit = withProcFields(run, (n, i) => ({ jitMsPerS: n === 'kafka' ? 100 + i : 0 }));
  const withJit = (brokerWarmupS: number): RunResult => ({ ...jit, meta: { ...jit.meta, brokerWarmupS } });
  const md = markdown(withJit(30), 'x.svg');
  t.match(md, /## JIT compilation/);
  t.match(md, /\| scenario \| kafka \|\n/, 'only the processes that compiled have a column');
  t.match(md, /\| single \/ main \| 100 \|/, "each phase's row carries its ms per second");
  t.match(md, /Before the first phase 30 s of single's load ran/, 'the warm-up is named');
  t.match(markdown(withJit(0), 'x.svg'), /\*\*No broker warm-up in this run/, 'and its absence is flagged');
});

t.test("each process's highest sample is split into anonymous and file-backed memory when recorded", async (t) => {
  const run = recorded('2026-11-23-all-seventh-rerun');
  t.notMatch(markdown(run, 'x.svg'), /Memory at the highest sample/, 'a result from before the measurement has no such table');
  const md = markdown(
    withProcFields(run, () => ({ rssMaxMb: 171.6, rssAtMax: { anonMb: 121.4, fileMb: 50.2 } })),
    'x.svg',
  );
  t.match(md, /## Memory at the highest sample/);
  t.match(md, /\| single \/ main \| 172 = 121 \+ 50 \|/, "each phase's row carries the peak and its two parts");
});
