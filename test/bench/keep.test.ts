// The `hanging` scenario's keep ratio over repeated pairs of phases (--hanging-pairs): their order,
// the ratio of each complete pair and their mean, which a steady drift of the host does not move much.
import t from 'tap';
import { hangingPhases, isHangingPhase, keepOf } from '../../bench/lib/keep.ts';
import { chartSvg, type PhaseResult, type RunResult } from '../../bench/lib/report.ts';
import { recorded } from './recorded.ts';

// Full runs with one pair of phases (before the option) and with two.
const onePair = recorded('stack-warm-broker');
const twoPairs = recorded('stack-two-hanging-pairs');

/** A phase of the hanging scenario with only what the keep ratio reads. */
const phase = (name: string, perDestinationPerSec: number) =>
  ({ scenario: 'hanging', phase: name, delivery: { perDestinationPerSec } }) as unknown as PhaseResult;

t.test('pairs run healthy, hanging, then hanging, healthy, alternately', async (t) => {
  t.same(
    hangingPhases(1).map((p) => p.phase),
    ['healthy', 'hanging'],
  );
  t.same(
    hangingPhases(3).map((p) => `${p.phase}:${p.kind}`),
    ['healthy:healthy', 'hanging:hanging', 'hanging-2:hanging', 'healthy-2:healthy', 'healthy-3:healthy', 'hanging-3:hanging'],
  );
  for (const bad of [0, -1, 1.5, Number.NaN]) t.throws(() => hangingPhases(bad), /--hanging-pairs wants a whole number/);
});

t.test('hanging phases are told from the healthy ones by name', async (t) => {
  for (const p of ['hanging', 'hanging-2', 'hanging-12']) t.ok(isHangingPhase(p), p);
  for (const p of ['healthy', 'healthy-2', 'main', 'hanging-', 'hanging-x', 'xhanging']) t.notOk(isHangingPhase(p), p);
});

t.test('one pair reads as recorded results always have', async (t) => {
  const keep = keepOf(onePair.phases);
  t.same(keep?.ratios, [onePair.derived.hangingHealthyRatio]);
  t.equal(keep?.mean, onePair.derived.hangingHealthyRatio);
  t.match(
    onePair.targets.find((x) => x.target.startsWith('healthy destinations keep'))?.measured,
    `(${keep?.first.hanging}/s vs ${keep?.first.healthy}/s per healthy destination)`,
    "the first pair's rates, as the one-pair summary names them",
  );
  t.equal(keepOf(onePair.phases.filter((p) => p.phase !== 'hanging')), null, 'no complete pair, no ratio');
});

t.test('a recorded run of two pairs: each ratio, and their mean as the keep figure', async (t) => {
  const keep = keepOf(twoPairs.phases);
  t.same(keep?.ratios, twoPairs.derived.hangingPairRatios);
  t.equal(keep?.ratios.length, 2);
  t.equal(keep?.mean, twoPairs.derived.hangingHealthyRatio);
  t.match(twoPairs.targets.find((x) => x.target.startsWith('healthy destinations keep'))?.measured, /the mean of 2 pairs/);
});

t.test('the mean of two pairs cancels most of a drift that one pair reads as a loss', async (t) => {
  // Destinations keep 90%, on a host that loses 5% of its speed with every phase.
  const host = (i: number) => 1 - 0.05 * i;
  const phases = [
    phase('healthy', 10 * host(0)),
    phase('hanging', 9 * host(1)),
    phase('hanging-2', 9 * host(2)),
    phase('healthy-2', 10 * host(3)),
    phase('healthy-3', 10 * host(4)),
  ];
  const keep = keepOf(phases);
  t.same(keep?.ratios, [0.855, 0.953], 'the third pair is incomplete and left out');
  t.equal(keep?.mean, 0.904);
});

t.test('the chart colours every hanging phase', async (t) => {
  const hangingColour = (r: RunResult) => chartSvg(r).split('#e57373').length - 1;
  const extra = onePair.phases
    .filter((p) => p.scenario === 'hanging')
    .reverse()
    .map((p) => ({ ...p, phase: `${p.phase}-2` }));
  t.equal(hangingColour({ ...onePair, phases: [...onePair.phases, ...extra] }), hangingColour(onePair) + 1);
  t.equal(hangingColour(twoPairs), hangingColour(onePair) + 1, 'a recorded run of two pairs');
});
