// The runner's scenario names (the default run stays the seven base scenarios; `types` and a bare type
// name expand to the type phases) and the tables the summary gives the type and two-sender phases,
// built from a recorded run's phase with its figures changed.
import t from 'tap';
import { markdown, type PhaseResult } from '../../bench/lib/report.ts';
import {
  BASE_SCENARIOS,
  BENCH_TYPES,
  parseScenarios,
  SCHEDULED_DELAY_S,
  scheduledTable,
  sendersTable,
  TYPE_SCENARIOS,
  typeOfScenario,
  typesTable,
} from '../../bench/lib/scenarios.ts';
import { phasesOf } from '../../bench/lib/topology.ts';
import { summarize } from '../../bench/lib/stats.ts';
import { recorded } from './recorded.ts';

t.test('all is the seven base scenarios; types and bare type names are opt-in', async (t) => {
  t.same(parseScenarios('all'), [...BASE_SCENARIOS]);
  t.same(
    parseScenarios('types'),
    BENCH_TYPES.map((x) => `type-${x}`),
  );
  t.equal(TYPE_SCENARIOS.length, 9);
  t.same(parseScenarios('sqs,type-kafka,single,sqs'), ['type-sqs', 'type-kafka', 'single']);
  t.same(parseScenarios('fanout,senders2'), ['fanout', 'senders2']);
  t.same(parseScenarios('scheduled'), ['scheduled'], 'scheduled is opt-in');
  t.notOk(parseScenarios('all').includes('scheduled' as never));
  t.throws(() => parseScenarios('nats'), /unknown scenario nats/);
  t.throws(() => parseScenarios(','), /names no scenario/);
  t.equal(typeOfScenario('type-s3'), 's3');
  t.equal(typeOfScenario('type-nats'), null);
  t.equal(typeOfScenario('single'), null);
});

const run = recorded('stack-slow-first-phases');
const base = run.phases[0] as PhaseResult;
const phase = (
  scenario: string,
  p: string,
  perSec: number,
  cpuMs: number,
  p99: number,
  rss: number,
  extra: Partial<PhaseResult> = {},
): PhaseResult => ({
  ...base,
  scenario,
  phase: p,
  delivery: { ...base.delivery, deliveredPerSec: perSec, missing: 0, latencyMs: { ...base.delivery.latencyMs, p99 } },
  efficiency: { ...base.efficiency, cpuMsPerDelivery: cpuMs },
  machine: {
    ...base.machine,
    load1Start: 3.1,
    load1End: 4.2,
    procs: {
      ...base.machine.procs,
      sender: { ...(base.machine.procs.sender as NonNullable<(typeof base.machine.procs)['sender']>), hwmMb: rss },
    },
  },
  ...extra,
});

t.test('the types table reads each type beside webhook of the same run', async (t) => {
  const phases = [
    phase('type-webhook', 'main', 2000, 1.5, 80, 120, { latencyFrom: 'peer' }),
    phase('type-sqs', 'main', 500, 6, 300, 140, {
      latencyFrom: 'attempt',
      peerRequests: { requests: 1_050, attempts: 7_500, perThousand: 140 },
    }),
    phase('single', 'main', 1800, 1.2, 50, 110),
  ];
  const table = typesTable(phases);
  const rows = table.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| type'));
  t.equal(rows.length, 2, 'only the type phases');
  t.equal(rows[0], '| webhook | 2,000 (100%) | 80 | peer | 1.5 (100%) | 120 | – | 0 | 3.1 → 4.2 |', 'no peer count for webhook');
  t.equal(rows[1], '| sqs | 500 (25%) | 300 | attempt | 6 (400%) | 140 | 140 | 0 | 3.1 → 4.2 |', 'requests per 1,000 attempts at the peer');
  t.equal(typesTable([phases[2] as PhaseResult]), '', 'no type phase, no table');
  t.match(markdown({ ...run, phases }, 'x.svg'), /## Destination types/);
  t.notMatch(markdown(run, 'x.svg'), /## Destination types/);
});

t.test('the two-sender table gives the ratio of two senders to one', async (t) => {
  const table = sendersTable([phase('senders2', 'one', 1000, 2, 90, 100), phase('senders2', 'two', 1250, 2.4, 70, 100)]);
  t.match(table, /\| 1 \| 1,000 \| 90 \| 2 \|/);
  t.match(table, /\| 2 \| 1,250 \| 70 \| 2\.4 \|/);
  t.match(table, /Two senders deliver 125% of one sender's rate/);
  t.equal(sendersTable([phase('senders2', 'one', 1000, 2, 90, 100)]), '', 'one phase alone: no table');
});

t.test('the scheduled phase publishes ahead and its table reads lateness p50, p95 and max', async (t) => {
  const [def] = phasesOf('scheduled', { latencyFraction: 0.25, idleS: 10, hangingPairs: 1 });
  t.equal(def?.scheduleS, SCHEDULED_DELAY_S, 'every event scheduled ahead');
  t.ok(SCHEDULED_DELAY_S > 5, 'far enough ahead to wait in the 5 s tier, then the 1 s tier');
  t.same(def?.rate, { fixed: 50 }, 'at a fixed rate');
  const lateness = summarize(Array.from({ length: 100 }, (_, i) => i + 1));
  t.equal(lateness.p95, 95, 'summaries carry p95');
  const p = phase('scheduled', 'main', 50, 2, lateness.p99, 100, {
    scheduledS: SCHEDULED_DELAY_S,
    delivery: { ...base.delivery, missing: 0, latencyMs: lateness },
  });
  const table = scheduledTable([p, phase('single', 'main', 1800, 1.2, 50, 110)]);
  const rows = table.split('\n').filter((l) => l.startsWith('| scheduled/'));
  t.same(rows, [`| scheduled/main | ${SCHEDULED_DELAY_S} | 100 | 50 | 95 | 100 | 1 | 0 | 3.1 → 4.2 |`], 'one row, the scheduled phase');
  t.equal(scheduledTable([phase('single', 'main', 1800, 1.2, 50, 110)]), '', 'no scheduled phase, no table');
  t.match(markdown({ ...run, phases: [p] }, 'x.svg'), /## Scheduled events/);
  const old = { ...p, delivery: { ...p.delivery, latencyMs: { ...lateness, p95: undefined } } };
  t.match(scheduledTable([old]), /\| 50 \| – \| 100 \|/, 'a summary without p95 (recorded before it) shows a dash');
});
