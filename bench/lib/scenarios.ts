// Scenario names of the runner and the per-destination-type comparison table (pure: unit-tested in
// test/bench/scenarios.test.ts). `types` expands to one `type-<t>` phase per destination type: one
// tenant, ten destinations of that type against its local peer, at max rate; `senders2` runs the same
// webhook load with one sender process, then with two.
import type { PhaseResult } from './report.ts';

export const BASE_SCENARIOS = ['single', 'tenants', 'fanout', 'hanging', 'latency', 'rate300', 'idle'] as const;
/**
 * What embedded mode (--embedded) runs by default: full speed (one destination, and many tenants), the
 * moderate load and idle (bench/lib/efficiency.ts). Full speed is in it so that a memory cut or hot-path
 * work that costs embedded throughput shows in every baseline.
 */
export const EMBEDDED_DEFAULT = 'single,tenants,idle,rate300';
/** Every destination type, webhook first: the others are read beside it. */
export const BENCH_TYPES = ['webhook', 'sqs', 'rabbitmq', 'gateway', 'kinesis', 'servicebus', 's3', 'pubsub', 'kafka'] as const;
export type BenchType = (typeof BENCH_TYPES)[number];
export const TYPE_SCENARIOS = BENCH_TYPES.map((t) => `type-${t}` as const);
export const EXTRA_SCENARIOS = ['senders2', 'overload', 'scheduled', ...TYPE_SCENARIOS] as const;
export type ScenarioName = (typeof BASE_SCENARIOS)[number] | (typeof EXTRA_SCENARIOS)[number];
/** Destinations of the one tenant in a type phase. */
export const TYPE_DESTINATIONS = 10;
/**
 * The `scheduled` phase: events published this many seconds ahead (deliver_at), so each waits in the
 * 5 s retry tier, then the 1 s tier, as any schedule of more than 5 s ends; at this fixed rate.
 */
export const SCHEDULED_DELAY_S = 8;
export const SCHEDULED_RATE = 50;

/**
 * The scenarios of `--scenario`: `all` is the default run (the seven base scenarios; the type and
 * two-sender scenarios would more than double it), `types` every `type-<t>`, a bare type name its
 * `type-<t>`; order kept, repeats dropped.
 */
export function parseScenarios(arg: string): ScenarioName[] {
  const known: readonly string[] = [...BASE_SCENARIOS, ...EXTRA_SCENARIOS];
  const out: ScenarioName[] = [];
  const add = (s: string) => {
    if (!out.includes(s as ScenarioName)) out.push(s as ScenarioName);
  };
  for (const raw of arg
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (raw === 'all') BASE_SCENARIOS.forEach(add);
    else if (raw === 'types') TYPE_SCENARIOS.forEach(add);
    else if (known.includes(raw)) add(raw);
    else if ((BENCH_TYPES as readonly string[]).includes(raw)) add(`type-${raw}`);
    else throw new Error(`unknown scenario ${raw}; one of all, types, ${known.join(', ')} (or a destination type)`);
  }
  if (out.length === 0) throw new Error('--scenario names no scenario');
  return out;
}

export function typeOfScenario(s: string): BenchType | null {
  const t = s.startsWith('type-') ? s.slice(5) : '';
  return (BENCH_TYPES as readonly string[]).includes(t) ? (t as BenchType) : null;
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');

/**
 * The type phases of a run side by side: deliveries/s, p99 publish→delivered (and where it was read:
 * the peer's receive time, or the attempt's time where the peer cannot tell), pipeline CPU ms per
 * delivery and the sender's peak RSS, each beside webhook's of the same run. Empty without type phases.
 */
export function typesTable(phases: readonly PhaseResult[]): string {
  const rows = phases.filter((p) => typeOfScenario(p.scenario));
  if (rows.length === 0) return '';
  const web = rows.find((p) => p.scenario === 'type-webhook');
  const vs = (x: number, w: number | undefined) => (w ? ` (${((x / w) * 100).toFixed(0)}%)` : '');
  const out = [
    '## Destination types',
    '',
    `One tenant, ${TYPE_DESTINATIONS} destinations of the type against its local peer, at max rate; in brackets: the share of webhook's figure in the same run.`,
    '',
    '| type | deliveries/s | p99 publish→delivered ms | read at | pipeline CPU ms/delivery | sender RSS peak MB | peer requests / 1,000 attempts | missing | load1 |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of rows) {
    const d = p.delivery;
    const rss = p.machine.procs.sender?.hwmMb ?? 0;
    out.push(
      `| ${typeOfScenario(p.scenario)} | ${int(d.deliveredPerSec)}${vs(d.deliveredPerSec, web?.delivery.deliveredPerSec)} | ${d.latencyMs.p99} | ` +
        `${p.latencyFrom ?? 'peer'} | ${p.efficiency.cpuMsPerDelivery}${vs(p.efficiency.cpuMsPerDelivery, web?.efficiency.cpuMsPerDelivery)} | ` +
        `${rss} | ${p.peerRequests ? p.peerRequests.perThousand : '–'} | ${d.missing} | ${p.machine.load1Start} → ${p.machine.load1End} |`,
    );
  }
  return `${out.join('\n')}\n`;
}

/**
 * The scheduled phase's lateness: deliver_at to arrival at the receiver, p50/p95/max, beside the
 * bound docs/api.md states ("Scheduled events"). Empty without that phase.
 */
export function scheduledTable(phases: readonly PhaseResult[]): string {
  const rows = phases.filter((p) => p.scheduledS !== undefined);
  if (rows.length === 0) return '';
  return [
    '## Scheduled events',
    '',
    'Events published with `deliver_at` ahead, at a fixed rate; lateness is arrival at the receiver minus `deliver_at` (never negative: none is early).',
    '',
    '| phase | scheduled ahead s | deliveries | lateness p50 ms | p95 ms | max ms | min ms | missing | load1 |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map((p) => {
      const l = p.delivery.latencyMs;
      return (
        `| ${p.scenario}/${p.phase} | ${p.scheduledS} | ${int(l.count)} | ${l.p50} | ${l.p95 ?? '–'} | ${l.max} | ${l.min} | ` +
        `${p.delivery.missing} | ${p.machine.load1Start} → ${p.machine.load1End} |`
      );
    }),
    '',
  ].join('\n');
}

/** `senders2`'s two phases side by side: deliveries/s with two sender processes against one. */
export function sendersTable(phases: readonly PhaseResult[]): string {
  const one = phases.find((p) => p.scenario === 'senders2' && p.phase === 'one');
  const two = phases.find((p) => p.scenario === 'senders2' && p.phase === 'two');
  if (!one || !two) return '';
  const ratio = two.delivery.deliveredPerSec / Math.max(1, one.delivery.deliveredPerSec);
  return [
    '## Two sender instances against one',
    '',
    '| senders | deliveries/s | p99 publish→receive ms | pipeline CPU ms/delivery | load1 |',
    '|---|---|---|---|---|',
    ...[one, two].map(
      (p, i) =>
        `| ${i + 1} | ${int(p.delivery.deliveredPerSec)} | ${p.delivery.latencyMs.p99} | ${p.efficiency.cpuMsPerDelivery} | ${p.machine.load1Start} → ${p.machine.load1End} |`,
    ),
    '',
    `Two senders deliver ${(ratio * 100).toFixed(0)}% of one sender's rate.`,
    '',
  ].join('\n');
}
