// What each phase deploys: the phases of every scenario (PhaseDef: topology, rate, length), and
// building a phase's tenants and destinations through the gateway's API (webhook destinations on the
// receiver, or another type's destinations against its peer), with the webhook secrets handed to
// the receiver for its signature check.
import { hangingPhases } from './keep.ts';
import type { Receiver } from './receiver-process.ts';
import type { Topology } from './report.ts';
import { type BenchType, SCHEDULED_DELAY_S, SCHEDULED_RATE, type ScenarioName, TYPE_DESTINATIONS, typeOfScenario } from './scenarios.ts';
import type { Deployment } from './stack.ts';
import type { TypePeer } from './type-peers.ts';
import { MODERATE_RATE, MODERATE_TENANTS } from './efficiency.ts';

/** Seconds the idle phase waits after the probe event before its window opens. */
export const IDLE_SETTLE_S = 5;

/**
 * The overload phase's admission bound: single's load (which outpaces delivery) against a bound of
 * about one second of its delivery rate, so publish→receive stays near a second instead of growing.
 */
export const OVERLOAD_BACKLOG = 1500;

export interface PhaseDef {
  scenario: ScenarioName;
  phase: string;
  title: string;
  topology: Topology;
  /** 'max', a share of the maximum rate (resolved when the phase starts), or events/s (0: idle, no load). */
  rate: 'max' | { share: number } | { fixed: number };
  /** Seconds of the phase and of its warm-up when not --duration's (the idle phase). */
  durationS?: number;
  warmupS?: number;
  /** The destinations' type (webhook when absent); other types' deliveries are read from their attempts. */
  destType?: BenchType;
  /** Sender processes (1 when absent). */
  senders?: number;
  /** Settings of the services beyond the bench's own (the overload phase's admission bound). */
  env?: Record<string, string>;
  /** At max rate, publish without the runner's own backlog cap (--backlog): the service's bound holds. */
  ungated?: boolean;
  /** Publish every event this many seconds ahead (deliver_at); the phase then measures lateness. */
  scheduleS?: number;
}

/** The options phase definitions read: --latency-fraction, --idle-seconds, --hanging-pairs. */
export interface PhaseShape {
  latencyFraction: number;
  idleS: number;
  hangingPairs: number;
}

/** The phases of scenario `s`, in run order (`hanging`: its pairs; `senders2`: one sender, then two). */
export function phasesOf(s: ScenarioName, o: PhaseShape): PhaseDef[] {
  const type = typeOfScenario(s);
  if (type)
    return [
      {
        scenario: s,
        phase: 'main',
        title: `one tenant, ${TYPE_DESTINATIONS} ${type} destinations`,
        topology: t(1, TYPE_DESTINATIONS, 0),
        rate: 'max',
        destType: type,
      },
    ];
  switch (s) {
    case 'single':
      return [{ scenario: s, phase: 'main', title: 'one tenant, one destination', topology: t(1, 1, 0), rate: 'max' }];
    case 'tenants':
      return [{ scenario: s, phase: 'main', title: '1,000 tenants x 3 destinations', topology: t(1000, 3, 0), rate: 'max' }];
    case 'fanout':
      return [{ scenario: s, phase: 'main', title: 'one event to 10 destinations', topology: t(1, 10, 0), rate: 'max' }];
    case 'hanging':
      return hangingPhases(o.hangingPairs).map(({ kind, phase }) => ({
        scenario: s,
        phase,
        title: `200 tenants x 5 destinations, ${kind === 'healthy' ? 'all healthy' : '1 in 5 hangs'}`,
        topology: t(200, 5, kind === 'healthy' ? 0 : 1),
        rate: 'max',
      }));
    case 'overload':
      return [
        {
          scenario: s,
          phase: 'main',
          title: `one tenant, one destination, PUBLISH_MAX_BACKLOG=${OVERLOAD_BACKLOG}`,
          topology: t(1, 1, 0),
          rate: 'max',
          env: { PUBLISH_MAX_BACKLOG: String(OVERLOAD_BACKLOG) },
          ungated: true,
        },
      ];
    case 'scheduled':
      return [
        {
          scenario: s,
          phase: 'main',
          title: `one tenant, one destination, events ${SCHEDULED_DELAY_S} s ahead (deliver_at) at ${SCHEDULED_RATE}/s`,
          topology: t(1, 1, 0),
          rate: { fixed: SCHEDULED_RATE },
          scheduleS: SCHEDULED_DELAY_S,
        },
      ];
    case 'senders2':
      return [1, 2].map((n) => ({
        scenario: s,
        phase: n === 1 ? 'one' : 'two',
        title: `one event to 10 destinations, ${n} sender process${n > 1 ? 'es' : ''}`,
        topology: t(1, 10, 0),
        rate: 'max' as const,
        senders: n,
      }));
    case 'latency':
      return [
        {
          scenario: s,
          phase: 'main',
          title: `one tenant, one destination at ${o.latencyFraction * 100}% of the max rate`,
          topology: t(1, 1, 0),
          rate: { share: o.latencyFraction },
        },
      ];
    case 'rate300':
      return [
        {
          scenario: s,
          phase: 'main',
          title: `${MODERATE_TENANTS} tenants x 1 destination at a fixed ${MODERATE_RATE} events/s`,
          topology: t(MODERATE_TENANTS, 1, 0),
          rate: { fixed: MODERATE_RATE },
        },
      ];
    case 'idle':
      return [
        {
          scenario: s,
          phase: 'main',
          title: `${MODERATE_TENANTS} tenants x 1 destination, no events for ${o.idleS} s`,
          topology: t(MODERATE_TENANTS, 1, 0),
          rate: { fixed: 0 },
          durationS: IDLE_SETTLE_S + o.idleS,
          warmupS: IDLE_SETTLE_S,
        },
      ];
    default:
      throw new Error(`no phases for scenario ${s}`);
  }
}
function t(tenants: number, destinationsPerTenant: number, hangingPerTenant: number): Topology {
  return { tenants, destinationsPerTenant, hangingPerTenant };
}

/** A phase's tenants and destinations as created. */
export interface Built {
  tenants: string[];
  healthyDestinations: number;
  hangingDestinations: number;
  /** Healthy deliveries per event of tenant i (the same for all tenants here). */
  healthyPerEvent: number;
}

/** A request to the gateway with the deployment's admin key; the body parsed when there is one. */
export async function api(dep: Deployment, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${dep.gatewayUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${dep.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** `fn` over `items`, `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++] as T);
    }),
  );
}

/**
 * Creates `topo` through the API: tenants t0000, t0001, ...; webhook destinations on the receiver (the
 * first `hangingPerTenant` of each on its hanging paths), or `peer`'s type against that peer.
 */
export async function buildTopology(
  dep: Deployment,
  rx: Receiver,
  topo: Topology,
  peer?: { type: BenchType; peer: TypePeer },
): Promise<Built> {
  const tenants = Array.from({ length: topo.tenants }, (_, i) => `t${String(i).padStart(4, '0')}`);
  const secrets: Record<string, string> = {};
  await pool(tenants, 16, async (tenant) => {
    const r = await api(dep, 'PUT', `/api/v1/tenants/${tenant}`);
    if (r.status >= 300) throw new Error(`PUT tenant ${tenant}: ${r.status} ${JSON.stringify(r.body)}`);
    for (let k = 0; peer && k < topo.destinationsPerTenant; k++) {
      const spec = await peer.peer.destination(k);
      const d = await api(dep, 'POST', `/api/v1/tenants/${tenant}/destinations`, { type: peer.type, topics: '*', ...spec });
      if (d.status !== 201) throw new Error(`POST ${peer.type} destination: ${d.status} ${JSON.stringify(d.body)}`);
    }
    for (let k = 0; !peer && k < topo.destinationsPerTenant; k++) {
      const path = `/${k < topo.hangingPerTenant ? 'hang' : 'd'}/${tenant}/${k}`;
      const d = await api(dep, 'POST', `/api/v1/tenants/${tenant}/destinations`, {
        type: 'webhook',
        topics: '*',
        config: { url: `${k < topo.hangingPerTenant ? rx.hangUrl : rx.url}${path}` },
      });
      if (d.status !== 201) throw new Error(`POST destination: ${d.status} ${JSON.stringify(d.body)}`);
      const secret = (d.body as { credentials?: { secret?: string } }).credentials?.secret;
      if (secret) secrets[path] = secret;
    }
  });
  await rx.post('/__bench/secrets', secrets);
  const healthyPerEvent = topo.destinationsPerTenant - topo.hangingPerTenant;
  return {
    tenants,
    healthyDestinations: topo.tenants * healthyPerEvent,
    hangingDestinations: topo.tenants * topo.hangingPerTenant,
    healthyPerEvent,
  };
}
