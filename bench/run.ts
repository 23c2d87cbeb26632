// The benchmark runner (npm run bench). Starts its own Kafka and Postgres on free loopback ports, a
// receiver process, then for every scenario phase the four services as separate processes on a fresh
// database and topic prefix; publishes load, measures, drains, and writes results under bench/runs/
// (git-ignored); --baseline also writes bench/results/baseline.*, the one run kept in the tree.
// See bench/README.md for what is measured and how to read it.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import kafkajs from 'kafkajs';
import pg from 'pg';
// The runner's own Kafka clients share the machine with the services: without this fix each of
// their connections would wake the runner every millisecond (docs/architecture.md).
import '../shared/src/kafka/kafkajs-idle-poll.ts';
import { ROOT } from '../shared/src/testing/index.ts';
import { type CeilingResult, type LoadHandle, runCeiling, startLoad, type Via } from './load.ts';
import { hangingPhases, keepOf } from './lib/keep.ts';
import { cores, loadavg, ProcSampler, resetPeakRss, type Tracked } from './lib/proc.ts';
import { type PgStatements, RUNNER_TAG, readStatements, resetStatements } from './lib/pg-statements.ts';
import { summarizeProfile } from './lib/profile.ts';
import { memoryTarget, restateTargets, throughputTarget } from './lib/targets.ts';
import {
  chartSvg,
  markdown,
  type PhaseResult,
  readRunResult,
  slowPhasesNote,
  type RunResult,
  type SeriesPoint,
  type Target,
  type Topology,
} from './lib/report.ts';
import {
  BASE_SCENARIOS,
  type BenchType,
  EMBEDDED_DEFAULT,
  EXTRA_SCENARIOS,
  parseScenarios,
  type ScenarioName,
  TYPE_DESTINATIONS,
  typeOfScenario,
} from './lib/scenarios.ts';
import { startTypePeer, type TypePeer } from './lib/type-peers.ts';
import { type Deployment, deploy, deployEmbedded, type Infra, SERVICES, type ServiceName, startInfra } from './lib/stack.ts';
import { MODERATE_RATE, MODERATE_TENANTS, moderateTargets, pipelineProcesses, sumMetric } from './lib/efficiency.ts';
import { EMPTY_SUMMARY, fmtInt, round, sleep, summarize, type Summary } from './lib/stats.ts';

const SCENARIOS = BASE_SCENARIOS;
// The pipeline's CPU per delivery counts the services and the stores they write to, not the
// receiver or the load generator, which a real deployment does not run.
const STORES = ['kafka', 'postgres'] as const;
type StoreName = (typeof STORES)[number];

const { values: opt } = parseArgs({
  options: {
    scenario: { type: 'string' },
    embedded: { type: 'boolean', default: false },
    'idle-seconds': { type: 'string' },
    duration: { type: 'string' },
    quick: { type: 'boolean', default: false },
    via: { type: 'string', default: 'http' },
    concurrency: { type: 'string' },
    batch: { type: 'string', default: '100' },
    payload: { type: 'string', default: '256' },
    backlog: { type: 'string', default: '5000' },
    'max-rate': { type: 'string' },
    'broker-warmup': { type: 'string' },
    'hanging-pairs': { type: 'string' },
    'latency-fraction': { type: 'string', default: '0.25' },
    'ceiling-seconds': { type: 'string' },
    'ceiling-concurrency': { type: 'string', default: '64' },
    profile: { type: 'boolean', default: false },
    'pg-statements': { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'info' },
    env: { type: 'string', multiple: true, default: [] },
    'node-flag': { type: 'string', multiple: true, default: [] },
    out: { type: 'string', default: join(ROOT, 'bench/runs') },
    label: { type: 'string' },
    baseline: { type: 'boolean', default: false },
    'keep-logs': { type: 'boolean', default: false },
    source: { type: 'boolean', default: false },
    'services-root': { type: 'string' },
    'hang-origin': { type: 'string', default: 'separate' },
    pause: { type: 'string', multiple: true, default: [] },
    help: { type: 'boolean', default: false },
    render: { type: 'string' },
  },
});

if (opt.render) {
  // Rewrites the Markdown summary and the chart of an earlier results JSON (after a report change).
  const file = opt.render;
  const base = file.replace(/\.json$/, '');
  const r = readRunResult(file);
  // Targets as decided since (docs/performance.md, "Targets"), whatever the run recorded.
  // (An embedded run's targets stay as recorded: the per-service memory target is the stack's.)
  if (r.meta.deployment !== 'embedded') r.targets = restateTargets(r, SERVICES);
  writeFileSync(`${base}.json`, `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(`${base}.svg`, chartSvg(r));
  writeFileSync(`${base}.md`, markdown(r, `${basename(base)}.svg`));
  console.log(`${base}.md and .svg rewritten`);
  process.exit(0);
}

if (opt.help) {
  console.log(`npm run bench -- [options]
  --scenario a,b     ${SCENARIOS.join(', ')} or all (default all: these seven; ${EMBEDDED_DEFAULT} with --embedded);
                     not in all: types (one type-<t> phase per destination type: 1 tenant, ${TYPE_DESTINATIONS}
                     destinations of the type against its local peer), type-<t> or just <t> for one,
                     senders2 (fanout's load with one sender process, then two); ${EXTRA_SCENARIOS.length} extra names
  --duration S       seconds of load per phase (default 60; 10 with --quick)
  --embedded         run embedded mode (npm start: every service in one process on the embedded log and
                     PGlite) instead of the four services with Kafka and Postgres; webhook scenarios only
  --idle-seconds S   seconds the idle phase measures, after 5 s of settling (default 20; 10 with --quick)
  --quick            smoke run: 10 s phases, 5 s ceiling, shorter drains
  --via MODE         http (one event per request, default), batch (POST /publish/batch), kafka (producer to the events topic)
  --concurrency N    publish requests in flight (default 64 for http, 8 for batch and kafka)
  --batch N          events per batch request or Kafka send (default 100)
  --payload BYTES    size of each event's data (default 256)
  --backlog N        max-rate phases hold publishing while more than N deliveries are outstanding (default 5000)
  --max-rate N       events/s the latency scenario takes as 100% when 'single' is not in this run
  --broker-warmup S  seconds of single's load through a deployment of its own before the first phase,
                     unmeasured, so the broker's JIT has compiled its request paths (default 30; 0 with --quick)
  --hanging-pairs N  run hanging's two phases N times, ordered healthy, hanging, hanging, healthy, ...;
                     keep is the mean of the pairs' ratios, each listed (default 2; 1 with --quick;
                     a pair takes ~2.6 min; an even N cancels a steady drift of the host)
  --latency-fraction F   share of the maximum rate for the latency scenario (default 0.25)
  --ceiling-seconds S    length of each bare ceiling run (default 20; 5 with --quick)
  --profile          run the services under node --cpu-prof and summarise the profiles
  --pg-statements    Postgres with pg_stat_statements: each phase's most expensive statements in the summary
  --log-level L      services' LOG_LEVEL (default info, as deployed)
  --env K=V          extra service environment (repeatable), e.g. --env SENDER_CONCURRENCY=128
  --node-flag=FLAG   a flag on every service's node command line (repeatable), for V8 flags Node
                     refuses in NODE_OPTIONS, e.g. --node-flag=--single-threaded-gc
  --label NAME       results file name (default <date>-<scenarios>[-quick])
  --out DIR          where results go (default bench/runs/, git-ignored)
  --baseline         also write bench/results/baseline.{md,json,svg}
  --keep-logs        keep service logs (printed path)
  --source           run the services' TypeScript directly instead of the built JavaScript (npm run build),
                     which is what production images run (type stripping costs ~40 MB RSS per process)
  --services-root DIR    run the services of another checkout (bench/tree.sh <ref> DIR), for A/B runs
  --render FILE.json     rewrite the .md and .svg of an earlier result, its targets restated as decided
  --hang-origin O        separate (default): hanging destinations on 127.0.0.2, another origin for the
                         sender's connection pool, as another host; shared: same origin as the healthy ones
  --pause SVC@AT+FOR     stop a service (SIGSTOP) AT seconds into every phase's load for FOR seconds, then
                         resume it (SIGCONT): a consumer made to fall behind, e.g. --pause attempts@20+15 (repeatable)`);
  process.exit(0);
}

const quick = opt.quick as boolean;
const durationS = Number(opt.duration ?? (quick ? 10 : 60));
const warmupS = Math.min(quick ? 2 : 10, Math.floor(durationS * 0.2));
const brokerWarmupS = Number(opt['broker-warmup'] ?? (quick ? 0 : 30));
if (!(brokerWarmupS >= 0)) throw new Error(`--broker-warmup wants seconds (0 for none), got ${opt['broker-warmup']}`);
// One pair's ratio also reads the host's drift between its two minutes (docs/performance.md, "Keep ratio over pairs of phases").
const hangingPairs = Number(opt['hanging-pairs'] ?? (quick ? 1 : 2));
const hangingRun = hangingPhases(hangingPairs);
const via = opt.via as Via;
if (!['http', 'batch', 'kafka'].includes(via)) throw new Error(`--via must be http, batch or kafka`);
const concurrency = Number(opt.concurrency ?? (via === 'http' ? 64 : 8));
const batchSize = Number(opt.batch);
const payloadBytes = Number(opt.payload);
const backlogCap = Number(opt.backlog);
const ceilingMs = Number(opt['ceiling-seconds'] ?? (quick ? 5 : 20)) * 1000;
const phaseCeilingMs = Math.min(ceilingMs, quick ? 3000 : 5000);
const drainMaxMs = quick ? 30_000 : 90_000;
const embedded = opt.embedded as boolean;
const scenarioArg = opt.scenario ?? (embedded ? EMBEDDED_DEFAULT : 'all');
const chosen: ScenarioName[] = parseScenarios(scenarioArg);
const idleS = Number(opt['idle-seconds'] ?? (quick ? 10 : 20));
/** Seconds the idle phase waits after the probe event before its window opens. */
const IDLE_SETTLE_S = 5;
if (embedded) {
  // One process on its own log and database: no broker to write to, no Postgres to ask, one sender.
  const refused = chosen.filter((s) => typeOfScenario(s) || s === 'senders2');
  if (refused.length) throw new Error(`--embedded runs webhook scenarios only, not ${refused.join(', ')}`);
  if (via === 'kafka') throw new Error('--embedded has no Kafka to publish to: --via http or batch');
  if (opt['pg-statements']) throw new Error('--embedded has no Postgres server: --pg-statements does not apply');
  if (opt.baseline) throw new Error('--baseline records the stack; an embedded run is kept under bench/runs/');
}
/** The pipeline's CPU: the services and the stores they write to (embedded mode: its one process). */
const PIPELINE_PROCESSES: readonly string[] = pipelineProcesses(embedded ? 'embedded' : 'stack', SERVICES);
// The services run with the runtime settings of the production image (its `ENV NODE_OPTIONS=` and
// glibc malloc lines), so the benchmark measures what ships; --env K=V overrides them.
const IMAGE_RUNTIME_ENV = ['NODE_OPTIONS', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'MALLOC_ARENA_MAX'];
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const imageEnv = Object.fromEntries(
  IMAGE_RUNTIME_ENV.flatMap((name) => {
    const value = new RegExp(`^ENV ${name}=("[^"]*"|\\S+)$`, 'm').exec(dockerfile)?.[1];
    return value ? [[name, value.replace(/^"|"$/g, '')]] : [];
  }),
);
const serviceEnv: Record<string, string> = {
  METRICS_PORT: '0', // several services on one host: each its own free port
  ...imageEnv,
  ...Object.fromEntries(
    (opt.env as string[]).map((kv) => {
      const i = kv.indexOf('=');
      if (i < 1) throw new Error(`--env wants K=V, got ${kv}`);
      return [kv.slice(0, i), kv.slice(i + 1)];
    }),
  ),
};
// V8 flags such as --optimize-for-size or --heap-growing-percent are refused in NODE_OPTIONS (the
// services would exit at start), so an experiment with them needs the command line.
const nodeFlags = opt['node-flag'] as string[];
for (const f of nodeFlags)
  if (!f.startsWith('--')) throw new Error(`--node-flag wants a flag such as --node-flag=--single-threaded-gc, got ${f}`);
// A service stopped mid-load falls behind as a consumer does after a long pause (a stalled disk, a
// stop-the-world collection, a host that froze): what it holds while catching up is the measure.
interface Pause {
  service: ServiceName;
  atS: number;
  forS: number;
}
const pauses: Pause[] = (opt.pause as string[]).map((p) => {
  const m = /^(\w+)@(\d+(?:\.\d+)?)\+(\d+(?:\.\d+)?)$/.exec(p);
  const service = SERVICES.find((s) => s === m?.[1]);
  if (!m || !service)
    throw new Error(`--pause wants SERVICE@AT+FOR (${SERVICES.join(', ')}; seconds into the load), e.g. attempts@20+15; got ${p}`);
  return { service, atS: Number(m[2]), forS: Number(m[3]) };
});
const date = new Date().toISOString().slice(0, 10);
const label =
  opt.label ?? `${date}-${embedded ? 'embedded-' : ''}${scenarioArg === 'all' ? 'all' : chosen.join('-')}${quick ? '-quick' : ''}`;
const outDir = opt.out as string;
/** The one run kept in the tree: the baseline the README and docs/performance.md cite. */
const BASELINE_DIR = join(ROOT, 'bench/results');

const started = Date.now();
const stamp = () => new Date().toISOString().slice(11, 19);
const log = (s: string) => console.log(`[${stamp()}] ${s}`);

interface PhaseDef {
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
}

function phasesOf(s: ScenarioName): PhaseDef[] {
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
      return hangingRun.map(({ kind, phase }) => ({
        scenario: s,
        phase,
        title: `200 tenants x 5 destinations, ${kind === 'healthy' ? 'all healthy' : '1 in 5 hangs'}`,
        topology: t(200, 5, kind === 'healthy' ? 0 : 1),
        rate: 'max',
      }));
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
          title: `one tenant, one destination at ${Number(opt['latency-fraction']) * 100}% of the max rate`,
          topology: t(1, 1, 0),
          rate: { share: Number(opt['latency-fraction']) },
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
          title: `${MODERATE_TENANTS} tenants x 1 destination, no events for ${idleS} s`,
          topology: t(MODERATE_TENANTS, 1, 0),
          rate: { fixed: 0 },
          durationS: IDLE_SETTLE_S + idleS,
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

// ---------------------------------------------------------------------------------------------------
// Receiver process

interface Receiver {
  url: string;
  /** Base URL for hanging destinations: another loopback address (another origin) unless --hang-origin shared. */
  hangUrl: string;
  child: ChildProcess;
  stats(q?: string): Promise<ReceiverStats>;
  post(path: string, body: unknown): Promise<void>;
  stop(): Promise<void>;
}

interface ReceiverStats {
  now: number;
  received: { ok: number; hang: number; ceiling: number };
  inWindow: { ok: number; hang: number; ceiling: number };
  hungNow: number;
  duplicates: { ok: number; hang: number; ceiling: number };
  verify: PhaseResult['delivery']['verify'];
  latency?: { ok: Summary; hang: Summary; ceiling: Summary };
  series?: { ok: Record<string, number>; hang: Record<string, number>; ceiling: Record<string, number> };
}

async function startReceiverProcess(): Promise<Receiver> {
  const separate = opt['hang-origin'] !== 'shared';
  const child = spawn(process.execPath, [join(ROOT, 'bench/receiver.ts'), ...(separate ? ['--also-listen', '127.0.0.2'] : [])], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { listening: port, hosts } = await new Promise<{ listening: number; hosts: string[] }>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    rl.once('line', (line) => resolve(JSON.parse(line) as { listening: number; hosts: string[] }));
    child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  if (separate && !hosts.includes('127.0.0.2')) log('receiver: 127.0.0.2 unavailable; hanging destinations share the healthy origin');
  return {
    url,
    hangUrl: hosts.includes('127.0.0.2') ? `http://127.0.0.2:${port}` : url,
    child,
    async stats(q = '') {
      const r = await fetch(`${url}/__bench/stats${q ? `?${q}` : ''}`);
      return (await r.json()) as ReceiverStats;
    },
    async post(path, body) {
      const r = await fetch(`${url}${path}`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      await r.text();
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Topology through the API

interface Built {
  tenants: string[];
  healthyDestinations: number;
  hangingDestinations: number;
  /** Healthy deliveries per event of tenant i (the same for all tenants here). */
  healthyPerEvent: number;
}

async function api(dep: Deployment, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${dep.gatewayUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${dep.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++] as T);
    }),
  );
}

async function buildTopology(dep: Deployment, rx: Receiver, topo: Topology, peer?: { type: BenchType; peer: TypePeer }): Promise<Built> {
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

// ---------------------------------------------------------------------------------------------------
// Postgres counts

async function storedAttempts(db: pg.Client): Promise<number> {
  const r = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM attempts ${RUNNER_TAG}`);
  return Number(r.rows[0]?.n ?? 0);
}

/**
 * Embedded mode's stored attempts: the records its attempts service has written, from the
 * process's metrics (`switchyard_records_consumed_total` of the `attempts` group counts a batch once
 * it is stored).
 */
async function attemptsConsumed(gatewayUrl: string): Promise<number> {
  const text = await (await fetch(`${gatewayUrl}/metrics`)).text();
  return sumMetric(text, 'switchyard_records_consumed_total', { group: 'attempts' });
}

/** Records written to each topic of a deployment (sum over partitions of high - low watermark). */
async function topicRecords(brokers: string, prefix: string): Promise<Record<string, number>> {
  const admin = new kafkajs.Kafka({ clientId: 'switchyard-bench-admin', brokers: [brokers], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const out: Record<string, number> = {};
    for (const topic of (await admin.listTopics()).filter((t) => t.startsWith(prefix)).sort()) {
      const n = (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
      if (n > 0) out[topic.slice(prefix.length)] = n;
    }
    return out;
  } finally {
    await admin.disconnect();
  }
}

/** A service's name in the process table: `sender-2` for a second sender instance. */
function trackedName(s: { name: string; instance: number }): string {
  return s.instance > 1 ? `${s.name}-${s.instance}` : s.name;
}

/**
 * What the receiver reports for webhook destinations, read from the attempts instead, for types whose
 * peer cannot tell the runner what it received: successful attempts of the load's events between
 * `from` and `to` (epoch ms), publish→delivered as the attempt's stored time minus the event's
 * `sent_at`, repeats of one event on one destination as duplicates, and the deliveries per second.
 */
async function attemptFigures(db: pg.Client, from: number, to: number): Promise<ReceiverStats> {
  const q = await db.query<{ at: number; ms: number; dup: boolean }>(
    `SELECT extract(epoch FROM a.time)::float8 * 1000 AS at,
            extract(epoch FROM a.time)::float8 * 1000 - (e.data->>'sent_at')::float8 AS ms,
            row_number() OVER (PARTITION BY a.event_id, a.destination_id ORDER BY a.time) > 1 AS dup
       FROM attempts a JOIN events e ON e.tenant_id = a.tenant_id AND e.id = a.event_id
      WHERE a.status = 'success' AND a.topic = 'bench.event' ${RUNNER_TAG}`,
  );
  const inWindow: number[] = [];
  const perSec: Record<string, number> = {};
  let dups = 0;
  for (const r of q.rows) {
    const at = Number(r.at);
    if (r.dup) dups++;
    if (at >= from && at < to) {
      inWindow.push(Number(r.ms));
      const sec = String(Math.floor(at / 1000));
      perSec[sec] = (perSec[sec] ?? 0) + 1;
    }
  }
  const zero = { ok: 0, hang: 0, ceiling: 0 };
  return {
    now: Date.now(),
    received: { ...zero, ok: q.rows.length },
    inWindow: { ...zero, ok: inWindow.length },
    hungNow: 0,
    duplicates: { ...zero, ok: dups },
    verify: { checked: 0, ok: 0, failed: 0, noSecret: 0, unsigned: 0, errors: [] },
    latency: { ok: summarize(inWindow), hang: { ...EMPTY_SUMMARY }, ceiling: { ...EMPTY_SUMMARY } },
    series: { ok: perSec, hang: {}, ceiling: {} },
  };
}

// ---------------------------------------------------------------------------------------------------
// One phase

interface Ctx {
  /** Kafka and Postgres; null in embedded mode. */
  infra: Infra | null;
  rx: Receiver;
  logsDir: string;
  /** The built tree the services run from, or null: their TypeScript sources. */
  built: string | null;
  profileDir: string | undefined;
  /** A bare ceiling run now (ms long). */
  ceiling: (ms: number) => Promise<CeilingResult>;
  maxRate: number | null;
}

let current: Deployment | null = null;

/**
 * Stops `p.service` at `p.atS` s into the load and resumes it `p.forS` s later. Returns what undoes it
 * at once (the phase's end comes first when the load is shorter): a stopped process would not stop.
 */
function schedulePause(p: Pause, dep: Deployment, phase: string, notes: string[]): () => void {
  const pid = dep.services.find((s) => s.name === p.service)?.child.pid;
  if (!pid) throw new Error(`--pause: no ${p.service} process`);
  let stopped = false;
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // Exited meanwhile: the phase reports the crash.
    }
  };
  const cont = () => {
    if (!stopped) return;
    stopped = false;
    signal('SIGCONT');
    log(`${phase}: ${p.service} resumed`);
  };
  const stopTimer = setTimeout(() => {
    stopped = true;
    signal('SIGSTOP');
    log(`${phase}: ${p.service} stopped for ${p.forS} s`);
    // Noted only once it happens: a load shorter than AT never stops the service.
    notes.push(`${p.service} stopped (SIGSTOP) ${p.atS}-${p.atS + p.forS} s into the load`);
  }, p.atS * 1000);
  const contTimer = setTimeout(cont, (p.atS + p.forS) * 1000);
  return () => {
    clearTimeout(stopTimer);
    clearTimeout(contTimer);
    cont();
  };
}

/** The services of one phase, on a fresh database and topic prefix; `profileDir`: under --cpu-prof. */
function deployServices(
  ctx: Ctx,
  label: string,
  profileDir: string | undefined,
  o: { env?: Record<string, string>; senders?: number } = {},
): Promise<Deployment> {
  const common = {
    dir: ctx.logsDir,
    label,
    logLevel: opt['log-level'] as string,
    ...(profileDir ? { profileDir } : {}),
    ...(opt['services-root'] ? { servicesRoot: opt['services-root'] } : {}),
    ...(ctx.built ? { built: ctx.built } : {}),
    env: { ...o.env, ...serviceEnv },
    nodeFlags,
  };
  if (!ctx.infra) return deployEmbedded(common);
  return deploy({ ...common, infra: ctx.infra, ...(o.senders ? { senders: o.senders } : {}) });
}

/**
 * The load of a phase: at `ratePerSec`, or (null) as fast as accepted while fewer than the backlog cap
 * of deliveries are outstanding (`received`: deliveries so far, as the caller last read them).
 */
function startPhaseLoad(
  dep: Deployment,
  ctx: Ctx,
  built: Built,
  o: { ratePerSec: number | null; durationMs: number; received: () => number },
): LoadHandle {
  const holder: { load?: LoadHandle } = {};
  const load = startLoad({
    via,
    gatewayUrl: dep.gatewayUrl,
    apiKey: dep.apiKey,
    ...(ctx.infra
      ? { kafka: { brokers: [ctx.infra.kafkaBrokers], topicPrefix: dep.env.KAFKA_TOPIC_PREFIX as string, partitions: 12 } }
      : {}),
    pick: (n) => ({ tenant_id: built.tenants[n % built.tenants.length] as string, topic: 'bench.event' }),
    ...(o.ratePerSec !== null ? { ratePerSec: o.ratePerSec } : {}),
    concurrency,
    batchSize,
    durationMs: o.durationMs,
    payloadBytes,
    ...(o.ratePerSec !== null
      ? {}
      : { gate: () => (holder.load?.stats.eventsSent ?? 0) * built.healthyPerEvent - o.received() < backlogCap }),
  });
  holder.load = load;
  return load;
}

/**
 * Single's load through a deployment of its own, unmeasured, before the first phase. The services
 * start afresh for every phase and warm up in its first seconds; the broker runs through the whole
 * run, and a cold one (a JVM) spent its first 20-25 s of load compiling its request paths, about
 * half of that inside the first phase's window (docs/performance.md, "Broker warm-up before the first phase").
 */
async function warmBroker(ctx: Ctx, seconds: number): Promise<void> {
  log(`broker warm-up: ${seconds} s of single's load, unmeasured; starting services`);
  const dep = await deployServices(ctx, 'broker-warmup', undefined);
  current = dep;
  try {
    const built = await buildTopology(dep, ctx.rx, (phasesOf('single')[0] as PhaseDef).topology);
    let received = 0;
    const load = startPhaseLoad(dep, ctx, built, { ratePerSec: null, durationMs: seconds * 1000, received: () => received });
    let loadDone = false;
    const result = load.done.finally(() => {
      loadDone = true;
    });
    while (!loadDone) {
      await Promise.race([dep.crashed, sleep(250)]);
      received = (await ctx.rx.stats()).received.ok;
    }
    const r = await result;
    log(`broker warm-up done: ${fmtInt(r.eventsAccepted)} events published, ${fmtInt(received)} delivered`);
  } finally {
    await dep.stop();
    current = null;
  }
}

async function runPhase(def: PhaseDef, ctx: Ctx): Promise<PhaseResult> {
  const name = `${def.scenario}/${def.phase}`;
  const targetRate =
    def.rate === 'max' ? null : 'fixed' in def.rate ? def.rate.fixed : Math.max(1, Math.round((ctx.maxRate ?? 0) * def.rate.share));
  if (def.rate !== 'max' && 'share' in def.rate && !ctx.maxRate)
    throw new Error(`${name} needs the max rate: run 'single' first or pass --max-rate`);
  const idle = targetRate === 0;
  const phaseS = def.durationS ?? durationS;
  const phaseWarmupS = def.warmupS ?? warmupS;
  // Another type's peer, for this phase only; its deliveries are read from their attempts.
  const peerTeardowns: Array<() => unknown> = [];
  const stopPeer = async () => {
    for (const fn of peerTeardowns.splice(0).reverse()) await Promise.resolve(fn()).catch(() => {});
  };
  const destType = def.destType && def.destType !== 'webhook' ? def.destType : null;
  let typePeer: { type: BenchType; peer: TypePeer } | undefined;
  if (destType) {
    log(`${name}: starting the ${destType} peer`);
    try {
      typePeer = {
        type: destType,
        peer: await startTypePeer(destType, { teardown: (fn) => peerTeardowns.push(fn) }, ctx.infra as Infra),
      };
    } catch (err) {
      await stopPeer();
      throw err;
    }
  }
  log(`${name}: ${def.title}; starting services`);
  const dep = await deployServices(ctx, `${def.scenario}-${def.phase}`, ctx.profileDir, {
    ...(typePeer ? { env: typePeer.peer.env } : {}),
    ...(def.senders ? { senders: def.senders } : {}),
  }).catch(async (err: unknown) => {
    await stopPeer();
    throw err;
  });
  current = dep;
  const notes: string[] = [];
  const undoPauses: Array<() => void> = [];
  let profileWindow: { from: number; to: number } | null = null;
  let result: PhaseResult | null = null;
  // Embedded mode's database is inside its process: the runner reads its metrics instead.
  const db = ctx.infra ? new pg.Client({ connectionString: dep.env.DATABASE_URL }) : null;
  await db?.connect();
  // The runner's own backend (it counts stored attempts) is not pipeline work.
  const runnerBackend = db ? Number((await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid) : 0;
  const attemptCount = () => (db ? storedAttempts(db) : attemptsConsumed(dep.gatewayUrl));
  // Where the peer cannot tell the runner what it received: successful attempts stored, by topic.
  const succeeded = async (topic: string) =>
    Number(
      (
        await (db as pg.Client).query<{ n: string }>(
          `SELECT count(*)::text AS n FROM attempts WHERE status = 'success' AND topic = $1 ${RUNNER_TAG}`,
          [topic],
        )
      ).rows[0]?.n ?? 0,
    );
  try {
    const built = await buildTopology(dep, ctx.rx, def.topology, typePeer);
    log(
      `${name}: ${built.tenants.length} tenants, ${built.healthyDestinations} healthy + ${built.hangingDestinations} hanging destinations; probing the pipeline`,
    );
    // One event through the whole pipeline: every consumer group has joined and routes, delivers, stores.
    await ctx.rx.post('/__bench/reset', {});
    const probeStart = Date.now();
    const probe = await api(dep, 'POST', '/api/v1/publish', {
      tenant_id: built.tenants[0],
      topic: 'bench.probe',
      data: { probe: true },
    });
    if (probe.status !== 202) throw new Error(`probe publish: ${probe.status} ${JSON.stringify(probe.body)}`);
    for (;;) {
      const got = typePeer ? await succeeded('bench.probe') : (await ctx.rx.stats()).received.ok;
      if (got >= built.healthyPerEvent && (await attemptCount()) >= built.healthyPerEvent) break;
      if (Date.now() - probeStart > 120_000) throw new Error('the probe event was not delivered and stored within 120 s');
      await Promise.race([dep.crashed, sleep(200)]);
    }
    log(`${name}: pipeline ready (probe took ${((Date.now() - probeStart) / 1000).toFixed(1)} s)`);
    await sleep(1000);
    // The ceiling right next to this phase, so its ratio compares like with like on a busy machine.
    const ceilingNear = await ctx.ceiling(phaseCeilingMs);
    await ctx.rx.post('/__bench/reset', {});
    const attempts0 = await attemptCount();

    // A Record, so a store added to STORES cannot go unsampled (and count no CPU).
    const infra = ctx.infra;
    const storePids: Record<StoreName, () => number[]> | null = infra && {
      kafka: infra.kafkaPids,
      postgres: () => infra.postgresPids().filter((p) => p !== runnerBackend),
    };
    const tracked: Tracked[] = [
      ...dep.services.map((s) => ({ name: trackedName(s), pids: () => (s.child.pid ? [s.child.pid] : []) })),
      { name: 'receiver', pids: () => (ctx.rx.child.pid ? [ctx.rx.child.pid] : []) },
      ...(storePids ? STORES.map((name) => ({ name, pids: storePids[name] })) : []),
      { name: 'bench', pids: () => [process.pid] },
    ];
    // Embedded mode's first start of a fresh data directory peaks at ~1.1 GB (PGlite's initdb;
    // docs/performance.md, "Embedded mode"): its peak is read from here on, the phase's own.
    if (embedded)
      for (const s of dep.services)
        if (s.child.pid && !resetPeakRss(s.child.pid)) notes.push(`${s.name}: peak RSS could not be reset; it includes start-up`);
    const sampler = new ProcSampler(tracked);
    sampler.start(1000);

    let received = 0;
    const load = startPhaseLoad(dep, ctx, built, { ratePerSec: targetRate, durationMs: phaseS * 1000, received: () => received });
    const loadStart = Date.now();
    for (const p of pauses) undoPauses.push(schedulePause(p, dep, name, notes));
    const windowFrom = loadStart + phaseWarmupS * 1000;
    const windowTo = loadStart + phaseS * 1000;
    // Stored attempts are counted every second; in embedded mode from its /metrics, every 5 s, which
    // costs the measured process less; never while idle, where nothing is stored and a query would
    // be the only work the pipeline does.
    const attemptPollMs = idle ? Infinity : db ? 1000 : 5000;
    profileWindow = { from: windowFrom, to: windowTo };
    const attemptSeries: Array<{ t: number; n: number }> = [{ t: loadStart, n: 0 }];
    let loadDone = false;
    const loadResult = load.done.finally(() => {
      loadDone = true;
    });
    let lastPrint = Date.now();
    let lastAttemptPoll = 0;
    let prev = { t: loadStart, acc: 0, rx: 0, att: 0 };
    const progressEvery = quick ? 2000 : 5000;
    let loadEnd = 0;
    let drainStart = 0;
    let lastProgress = { t: Date.now(), rx: 0, att: 0 };
    let attempts = 0;
    let statementsOpened = 0;
    let pgStatements: PgStatements | null = null;
    const readWindow = async () => {
      pgStatements = await readStatements(db as pg.Client, round((Date.now() - statementsOpened) / 1000, 1));
    };
    for (;;) {
      await Promise.race([dep.crashed, sleep(250)]);
      const s = await ctx.rx.stats();
      received = typePeer ? await succeeded('bench.event') : s.received.ok;
      const now = Date.now();
      if (opt['pg-statements'] && !statementsOpened && now >= windowFrom) {
        statementsOpened = now;
        await resetStatements(db as pg.Client);
      }
      if (statementsOpened && !pgStatements && now >= windowTo) await readWindow();
      if (now - lastAttemptPoll >= attemptPollMs || (loadEnd && now - lastAttemptPoll >= 1000 && !idle)) {
        lastAttemptPoll = now;
        attempts = (await attemptCount()) - attempts0;
        attemptSeries.push({ t: now, n: attempts });
      }
      if (received > lastProgress.rx || attempts > lastProgress.att) lastProgress = { t: now, rx: received, att: attempts };
      if (loadDone && !loadEnd) {
        loadEnd = now;
        drainStart = now;
      }
      const expected = load.stats.eventsAccepted * built.healthyPerEvent;
      if (now - lastPrint >= progressEvery) {
        const dt = (now - prev.t) / 1000;
        const procs = sampler.samples.at(-1)?.procs ?? {};
        const cpu = tracked.map(({ name }) => `${name.slice(0, 3)} ${Math.round(procs[name]?.cpuPct ?? 0)}`).join(' ');
        const phaseClock = loadEnd
          ? `drain ${Math.round((now - drainStart) / 1000)}s`
          : `${Math.round((now - loadStart) / 1000)}s/${phaseS}s`;
        log(
          `${name} ${phaseClock}: published ${fmtInt(load.stats.eventsAccepted)} (${fmtInt((load.stats.eventsAccepted - prev.acc) / dt)}/s), ` +
            `delivered ${fmtInt(received)} (${fmtInt((received - prev.rx) / dt)}/s), attempts ${fmtInt(attempts)} (${fmtInt((attempts - prev.att) / dt)}/s), ` +
            `outstanding ${fmtInt(Math.max(0, expected - received))}, hung ${s.hungNow} | cpu% ${cpu} | load1 ${loadavg()[0]}`,
        );
        prev = { t: now, acc: load.stats.eventsAccepted, rx: received, att: attempts };
        lastPrint = now;
      }
      if (loadEnd) {
        const caughtUp = received - s.duplicates.ok >= expected && attempts >= expected;
        if (caughtUp) break;
        if (now - drainStart > drainMaxMs) {
          notes.push(`drain stopped after ${drainMaxMs / 1000} s with ${fmtInt(expected - received)} deliveries outstanding`);
          break;
        }
        if (now - lastProgress.t > 20_000) {
          notes.push(`drain stopped: no progress for 20 s, ${fmtInt(expected - received)} deliveries outstanding`);
          break;
        }
      }
    }
    const drainS = round((Date.now() - drainStart) / 1000, 1);
    // Caught up before the window's end (a light phase): read what there is.
    if (statementsOpened && !pgStatements) await readWindow();
    sampler.stop();
    const lr = await loadResult;
    attempts = (await attemptCount()) - attempts0;
    attemptSeries.push({ t: Date.now(), n: attempts });

    const final = typePeer
      ? await attemptFigures(db as pg.Client, windowFrom, windowTo)
      : await ctx.rx.stats(`from=${windowFrom}&to=${windowTo}&latency=1`);
    const series = typePeer
      ? await attemptFigures(db as pg.Client, loadStart, Date.now())
      : await ctx.rx.stats(`from=${loadStart}&series=1`);
    // Rows by status, events and Kafka's records: the stack only (embedded mode's are inside its process).
    const byStatus = await db?.query<{ status: string; n: string }>('SELECT status, count(*)::text AS n FROM attempts GROUP BY status');
    const events = await db?.query<{ n: string }>('SELECT count(*)::text AS n FROM events');
    const attemptsByStatus = Object.fromEntries((byStatus?.rows ?? []).map((r) => [r.status, Number(r.n)]));
    const kafkaRecords = infra ? await topicRecords(infra.kafkaBrokers, dep.env.KAFKA_TOPIC_PREFIX as string) : {};

    const windowS = (windowTo - windowFrom) / 1000;
    const at = (t: number) => {
      // Attempts stored by time t, linearly between polls.
      for (let i = 1; i < attemptSeries.length; i++) {
        const a = attemptSeries[i - 1] as { t: number; n: number };
        const b = attemptSeries[i] as { t: number; n: number };
        if (t <= b.t) return a.n + ((b.n - a.n) * (t - a.t)) / Math.max(1, b.t - a.t);
      }
      return attemptSeries.at(-1)?.n ?? 0;
    };
    const acceptedInWindow = lr.accepted.window(windowFrom, windowTo).reduce((a, b) => a + b, 0);
    const deliveredPerSec = final.inWindow.ok / windowS;
    const expected = lr.eventsAccepted * built.healthyPerEvent;
    const unique = final.received.ok - final.duplicates.ok;
    const sOf = (t: number) => Math.floor((t - loadStart) / 1000);
    const seriesOut: SeriesPoint[] = [];
    const lastS = Math.max(phaseS, sOf(Date.now()));
    const pubPerS = new Map<number, number>();
    const atArr = lr.accepted.at.view();
    const accArr = lr.accepted.value.view();
    for (let i = 0; i < atArr.length; i++) {
      const k = sOf(atArr[i] as number);
      pubPerS.set(k, (pubPerS.get(k) ?? 0) + (accArr[i] as number));
    }
    const okPerS = new Map<number, number>();
    for (const [sec, n] of Object.entries(series.series?.ok ?? {})) {
      const k = sOf(Number(sec) * 1000);
      okPerS.set(k, (okPerS.get(k) ?? 0) + n);
    }
    for (let k = 0; k <= lastS; k++) {
      const t0 = loadStart + k * 1000;
      seriesOut.push({
        s: k,
        published: pubPerS.get(k) ?? 0,
        delivered: okPerS.get(k) ?? 0,
        attempts: Math.max(0, Math.round(at(t0 + 1000) - at(t0))),
      });
    }
    const machine = sampler.summary(windowFrom, windowTo);
    const pipelineCpu = [...PIPELINE_PROCESSES, ...dep.services.filter((x) => x.instance > 1).map(trackedName)].reduce(
      (sum, n) => sum + (machine.procs[n]?.cpuAvgPct ?? 0),
      0,
    );
    if (lr.behindMaxMs > 100) notes.push(`the load generator fell up to ${lr.behindMaxMs} ms behind its schedule`);
    if (final.received.ok === 0 && !idle) notes.push('nothing was delivered');

    result = {
      scenario: def.scenario,
      phase: def.phase,
      topology: def.topology,
      via,
      targetRate,
      durationS: phaseS,
      warmupS: phaseWarmupS,
      backlogCap: targetRate ? null : backlogCap,
      latencyFrom: typePeer ? 'attempt' : 'peer',
      ...(def.senders ? { senders: def.senders } : {}),
      publish: {
        eventsSent: lr.eventsSent,
        eventsAccepted: lr.eventsAccepted,
        rejected: lr.rejected,
        firstErrors: lr.firstErrors,
        acceptedPerSec: Math.round(acceptedInWindow / windowS),
        latencyMs: summarize(lr.latency.window(windowFrom, windowTo)),
        behindMaxMs: lr.behindMaxMs,
        gatedS: round(lr.gatedMs / 1000 / concurrency, 1),
      },
      delivery: {
        healthyPerEvent: built.healthyPerEvent,
        healthyDestinations: built.healthyDestinations,
        deliveredPerSec: Math.round(deliveredPerSec),
        eventsPerSec: Math.round(deliveredPerSec / Math.max(1, built.healthyPerEvent)),
        perDestinationPerSec: round(deliveredPerSec / Math.max(1, built.healthyDestinations), 2),
        attemptsPerSec: Math.round((at(windowTo) - at(windowFrom)) / windowS),
        latencyMs: final.latency?.ok ?? { ...EMPTY_SUMMARY },
        expected,
        received: final.received.ok,
        duplicates: final.duplicates.ok,
        hangRepeats: final.duplicates.hang,
        missing: Math.max(0, expected - unique),
        hungArrivals: final.received.hang,
        drainS,
        verify: final.verify,
      },
      stored: { attempts, attemptsByStatus, events: Number(events?.rows[0]?.n ?? 0) },
      kafkaRecords,
      machine,
      efficiency: {
        pipelineCpuPct: round(pipelineCpu, 1),
        cpuMsPerDelivery: round((pipelineCpu * 10) / Math.max(1, deliveredPerSec), 3),
      },
      series: seriesOut,
      profiles: [],
      ...(pgStatements ? { pgStatements } : {}),
      ceilingNear,
      ceilingRatio: round(deliveredPerSec / Math.max(1, ceilingNear.ratePerSec), 3),
      notes,
    };
    const d = result.delivery;
    log(
      `${name} done: ${fmtInt(result.publish.acceptedPerSec)} events/s published, ${fmtInt(d.deliveredPerSec)} deliveries/s (${(result.ceilingRatio * 100).toFixed(0)}% of ceiling), ` +
        `${fmtInt(d.attemptsPerSec)} attempts/s stored, ${result.efficiency.cpuMsPerDelivery} pipeline CPU ms/delivery; publish->receive p50 ${d.latencyMs.p50} p99 ${d.latencyMs.p99} max ${d.latencyMs.max} ms; ` +
        `publish API p50 ${result.publish.latencyMs.p50} p99 ${result.publish.latencyMs.p99} ms; missing ${d.missing}, duplicates ${d.duplicates}, ` +
        `signatures ${d.verify.ok}/${d.verify.checked} ok; load1 ${result.machine.load1Start} -> ${result.machine.load1End}, others ${result.machine.otherAvgPct}% cpu`,
    );
    return result;
  } finally {
    for (const undo of undoPauses.splice(0)) undo();
    await db?.end().catch(() => {});
    log(`${name}: stopping services`);
    await dep.stop();
    current = null;
    await stopPeer();
    if (ctx.profileDir && profileWindow) {
      // Only the measurement window: start-up (module loading) and the drain are left out.
      for (const svc of dep.services) {
        const file = join(ctx.profileDir, `${def.scenario}-${def.phase}-${svc.name}.cpuprofile`);
        if (existsSync(file) && svc.exitedAt && result) {
          result.profiles.push(summarizeProfile(file, 15, { ...profileWindow, exitedAt: svc.exitedAt }));
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Main

function gitDescribe(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT }).toString().trim();
    return dirty ? `${sha}+changes` : sha;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const load1Before = loadavg()[0];
  log(
    `switchyard bench ${label}: scenarios ${chosen.join(', ')}; ${durationS} s per phase (${warmupS} s warm-up), via ${via}, ` +
      `concurrency ${concurrency}${quick ? ', QUICK mode' : ''}; load1 ${load1Before} on ${cores()} cores`,
  );
  const runDir = mkdtempSync(join(tmpdir(), 'switchyard-bench-logs.'));
  const profileDir = opt.profile ? join(runDir, 'profiles') : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  // What production runs: the built JavaScript, of this checkout or of --services-root (so both
  // sides of an A/B run the same way; a checkout older than infra/build.ts runs its sources).
  const buildScript = join(opt['services-root'] ?? ROOT, 'infra/build.ts');
  const built = opt.source || !existsSync(buildScript) ? null : join(runDir, 'build');
  if (built) {
    execFileSync(process.execPath, ['--disable-warning=ExperimentalWarning', buildScript, '--out', built], { stdio: 'pipe' });
    log(`services built into ${built} (npm run build); --source runs the TypeScript instead`);
  } else if (!opt.source) {
    log(`${buildScript} not found: the services run from their TypeScript sources`);
  }
  let infra: Infra | null = null;
  if (embedded) log('embedded mode: one process per phase on its own log and PGlite; no Kafka, no Postgres');
  else {
    log('starting Kafka and Postgres on free ports');
    infra = await startInfra(log, { pgStatements: Boolean(opt['pg-statements']) });
    process.env.DATABASE_URL = infra.databaseUrl;
    process.env.KAFKA_BROKERS = infra.kafkaBrokers;
  }
  const rx = await startReceiverProcess();
  let stopping = false;
  const cleanup = async () => {
    if (stopping) return;
    stopping = true;
    await current?.stop().catch(() => {});
    await rx.stop().catch(() => {});
    await infra?.stop().catch(() => {});
    if (!opt['keep-logs']) rmSync(runDir, { recursive: true, force: true });
    else log(`service logs kept in ${runDir}`);
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      log(`${sig}: stopping`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    const ceiling = async (durationMs: number): Promise<CeilingResult> => {
      await rx.post('/__bench/reset', {});
      log(`bare ceiling: undici (${opt['ceiling-concurrency']} connections) -> receiver for ${durationMs / 1000} s`);
      const c = await runCeiling({
        url: rx.url,
        durationMs,
        concurrency: Number(opt['ceiling-concurrency']),
        payloadBytes,
      });
      log(`bare ceiling: ${fmtInt(c.ratePerSec)} requests/s, p50 ${c.latencyMs.p50} ms, p99 ${c.latencyMs.p99} ms, load1 ${loadavg()[0]}`);
      return c;
    };
    const ceilingStart = await ceiling(ceilingMs);
    let ceilingEnd: CeilingResult | null = null;
    const ctx: Ctx = {
      infra,
      rx,
      logsDir: runDir,
      built,
      profileDir,
      ceiling,
      maxRate: opt['max-rate'] ? Number(opt['max-rate']) : null,
    };
    if (brokerWarmupS > 0 && infra) await warmBroker(ctx, brokerWarmupS);
    const phases: PhaseResult[] = [];
    const failedPhases: string[] = [];
    for (const s of chosen) {
      for (const def of phasesOf(s)) {
        // A type or senders2 phase that cannot run here leaves its row out, not the run's other phases.
        const r =
          def.destType || def.senders
            ? await runPhase(def, ctx).catch((err: unknown) => {
                log(`${def.scenario}/${def.phase} FAILED, left out: ${(err as Error).message.split('\n')[0]}`);
                failedPhases.push(`${def.scenario}: ${(err as Error).message.split('\n')[0]}`);
                return null;
              })
            : await runPhase(def, ctx);
        if (!r) continue;
        phases.push(r);
        if (def.scenario === 'single' && !opt['max-rate']) ctx.maxRate = r.delivery.eventsPerSec;
      }
    }
    ceilingEnd = await ceiling(ceilingMs);

    // Targets.
    const targets: Target[] = [];
    const find = (s: string, ph = 'main') => phases.find((p) => p.scenario === s && p.phase === ph);
    const tp = throughputTarget(phases);
    if (tp) targets.push(tp);
    const lat = find('latency');
    if (lat) {
      targets.push({
        target: `p99 publish→receive ≤ 50 ms at ${Number(opt['latency-fraction']) * 100}% load`,
        measured: `p99 ${lat.delivery.latencyMs.p99} ms at ${lat.targetRate}/s (p50 ${lat.delivery.latencyMs.p50}, max ${lat.delivery.latencyMs.max})`,
        met: lat.delivery.latencyMs.p99 <= 50,
      });
    }
    const keep = keepOf(phases);
    if (keep) {
      // One decimal: 0.899 read as "90%" beside "NOT met".
      const pc = (x: number) => `${(x * 100).toFixed(1)}%`;
      targets.push({
        target: 'healthy destinations keep ≥ 90% of their throughput while 20% hang',
        measured:
          keep.ratios.length === 1
            ? `${pc(keep.mean)} (${keep.first.hanging}/s vs ${keep.first.healthy}/s per healthy destination)`
            : `${pc(keep.mean)}, the mean of ${keep.ratios.length} pairs (${keep.ratios.map(pc).join(', ')})`,
        met: keep.mean >= 0.9,
      });
    }
    if (!embedded) targets.push(memoryTarget(phases, SERVICES));
    targets.push(...moderateTargets(phases, embedded ? 'embedded' : 'stack', SERVICES));

    const result: RunResult = {
      meta: {
        date: new Date().toISOString(),
        label,
        mode: quick ? 'quick' : 'full',
        deployment: embedded ? 'embedded' : 'stack',
        profiled: Boolean(opt.profile),
        hangOrigin: opt['hang-origin'] as string,
        services: built ? 'built' : 'source',
        command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
        git: gitDescribe(),
        node: process.version,
        cpu: cpus()[0]?.model ?? 'unknown',
        cores: cores(),
        memGb: Math.round(totalmem() / 1024 ** 3),
        load1Before,
        load1After: loadavg()[0],
        wallS: Math.round((Date.now() - started) / 1000),
        logLevel: opt['log-level'] as string,
        serviceEnv,
        nodeFlags,
        brokerWarmupS: infra ? brokerWarmupS : 0,
        hangingPairs,
      },
      ceiling: { start: ceilingStart, end: ceilingEnd },
      phases,
      derived: {
        maxRatePerSec: ctx.maxRate,
        latencyRatePerSec: lat?.targetRate ?? null,
        hangingHealthyRatio: keep?.mean ?? null,
        ...(keep ? { hangingPairRatios: keep.ratios } : {}),
        ...(failedPhases.length ? { failedPhases } : {}),
      },
      targets,
    };
    mkdirSync(outDir, { recursive: true });
    const write = (base: string, dir = outDir) => {
      writeFileSync(join(dir, `${base}.json`), `${JSON.stringify(result, null, 2)}\n`);
      writeFileSync(join(dir, `${base}.svg`), chartSvg(result));
      writeFileSync(join(dir, `${base}.md`), markdown(result, `${base}.svg`));
    };
    write(label);
    if (opt.baseline) write('baseline', BASELINE_DIR);
    log(`results: ${join(outDir, `${label}.md`)} (.json, .svg)${opt.baseline ? ` and ${join(BASELINE_DIR, 'baseline.md')}` : ''}`);
    for (const tg of targets) log(`target: ${tg.target}: ${tg.measured}${tg.met === null ? '' : tg.met ? ' -> met' : ' -> NOT met'}`);
    const slowNote = slowPhasesNote(result);
    if (slowNote) log(`warning: ${slowNote}`);
    if (profileDir && existsSync(profileDir)) {
      const keep = join(outDir, 'profiles', label);
      mkdirSync(keep, { recursive: true });
      for (const f of readdirSync(profileDir)) {
        execFileSync('cp', [join(profileDir, f), join(keep, f)]);
      }
      log(`raw profiles: ${keep} (git-ignored; open them in Chrome DevTools)`);
    }
  } finally {
    await cleanup();
  }
}

await main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
