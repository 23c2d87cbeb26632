// The targets as docs/performance.md ("Targets") reads them, against a recorded full run:
// memory judged on each service's own (anonymous) memory with the whole RSS beside it, throughput
// reported but not judged, and an older result's targets restated that way by --render.
import t from 'tap';
import type { ProcSummary } from '../../bench/lib/proc.ts';
import type { RunResult } from '../../bench/lib/report.ts';
import { memoryTarget, restateTargets, throughputTarget } from '../../bench/lib/targets.ts';
import { recorded } from './recorded.ts';

const SERVICES = ['gateway', 'router', 'sender', 'attempts'];
const run = recorded('stack-warm-broker');

/** The run as if each service's highest anonymous memory had been `anon(name)` in every phase. */
const withAnon = (r: RunResult, anon: (name: string) => number | undefined): RunResult => ({
  ...r,
  phases: r.phases.map((p) => ({
    ...p,
    machine: {
      ...p.machine,
      procs: Object.fromEntries(
        Object.entries(p.machine.procs).map(([n, s]): [string, ProcSummary] => [n, { ...s, anonMaxMb: anon(n), rssAtMax: undefined }]),
      ),
    },
  })),
});

t.test('memory: met on anonymous memory even where the whole RSS is over 150 MB', async (t) => {
  const sender = Math.max(...run.phases.map((p) => Math.max(p.machine.procs.sender?.hwmMb ?? 0, p.machine.procs.sender?.rssMaxMb ?? 0)));
  t.ok(sender > 150, `the sender's RSS peaked at ${sender} MB`);
  const met = memoryTarget(withAnon(run, (n) => (n === 'sender' ? 117 : 70)).phases, SERVICES);
  t.equal(met.met, true);
  t.match(met.measured, `sender 117 MB (RSS ${sender} MB)`);
  const missed = memoryTarget(withAnon(run, (n) => (n === 'router' ? 151 : 70)).phases, SERVICES);
  t.equal(missed.met, false, 'one service over 150 MB of its own misses it');
  const unknown = memoryTarget(withAnon(run, () => undefined).phases, SERVICES);
  t.equal(unknown.met, null, 'a run that recorded no anonymous memory is not judged');
  t.match(unknown.measured, /^not recorded in this run; RSS gateway /);
});

t.test('throughput: the ratio of every full-speed phase, reported and never judged', async (t) => {
  const tp = throughputTarget(run.phases);
  t.equal(tp?.met, null);
  t.match(tp?.measured, /^single \d+%, tenants \d+%, fanout \d+%, hanging\/healthy \d+%$/);
  t.notMatch(tp?.measured, /latency|hanging\/hanging/, 'neither the fixed-rate phase nor the hanging phase');
  t.equal(throughputTarget(run.phases.filter((p) => p.scenario === 'latency')), null, 'no full-speed phase, no line');
  t.equal(tp?.target, 'end-to-end throughput ÷ bare ceiling (reported)');
  t.equal(
    throughputTarget(run.phases, 'embedded')?.target,
    'embedded: end-to-end throughput ÷ bare ceiling (reported)',
    "embedded mode's line is named as its other targets are",
  );
});

t.test('--render restates an older result: the latency and keep lines as recorded', async (t) => {
  t.match(run.targets.map((x) => x.target).join('\n'), /throughput ≥ 60%[\s\S]*< 150 MB RSS/, 'recorded under the old targets');
  const restated = restateTargets(run, SERVICES);
  t.equal(restated.length, run.targets.length);
  t.match(restated[0]?.target, /throughput ÷ bare ceiling \(reported\)/);
  t.match(restated.at(-1)?.target, /own memory \(anonymous RSS\) ≤ 150 MB/);
  for (const kept of run.targets.filter((x) => /p99|keep/.test(x.target))) t.ok(restated.includes(kept), kept.target);
});
