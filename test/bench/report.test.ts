// The benchmark report's flag for phases run on a slower machine, against two recorded full runs:
// one whose first phases ran while the host was slow, and its rerun straight after, which did not.
// And the summary names the node flags the services ran with.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { markdown, type RunResult, SLOW_CEILING_SHARE, slowPhases, slowPhasesNote } from '../../bench/lib/report.ts';
import { ROOT } from '@switchyard/shared/testing/index.ts';

const recorded = (label: string) => JSON.parse(readFileSync(join(ROOT, 'bench/results', `${label}.json`), 'utf8')) as RunResult;

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
