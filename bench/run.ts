// The benchmark runner (npm run bench): the command line and the run. Starts its own Kafka and
// Postgres on free loopback ports (bench/lib/stack.ts), a receiver process
// (bench/lib/receiver-process.ts), then runs every scenario's phases (bench/lib/phase.ts), the bare
// ceiling before and after; judges the targets and writes results under bench/runs/ (git-ignored);
// --baseline then runs embedded mode's default scenarios (a child run of this runner) and writes both
// into bench/results/baseline.*, the one run kept in the tree.
// See bench/README.md for what is measured and how to read it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
// The runner's own Kafka clients share the machine with the services: without this fix each of
// their connections would wake the runner every millisecond (docs/architecture.md).
import '../shared/src/kafka/kafkajs/idle-poll.ts';
import { ROOT } from '../shared/src/testing/index.ts';
import { type CeilingResult, runCeiling, type Via } from './load.ts';
import { hangingPhases, keepOf } from './lib/keep.ts';
import { cores, loadavg } from './lib/proc.ts';
import { memoryTarget, restateTargets, throughputTarget } from './lib/targets.ts';
import {
  chartSvg,
  markdown,
  type PhaseResult,
  readRunResult,
  slowPhasesNote,
  type RunResult,
  type Target,
  withEmbedded,
} from './lib/report.ts';
import {
  BASE_SCENARIOS,
  EMBEDDED_DEFAULT,
  EXTRA_SCENARIOS,
  parseScenarios,
  SCHEDULED_DELAY_S,
  SCHEDULED_RATE,
  type ScenarioName,
  TYPE_DESTINATIONS,
  typeOfScenario,
} from './lib/scenarios.ts';
import { type Infra, SERVICES, startFlags, startInfra } from './lib/stack.ts';
import { moderateTargets } from './lib/efficiency.ts';
import { type Pause, type PhaseContext, type PhaseOptions, runPhase, warmBroker } from './lib/phase.ts';
import { startReceiverProcess } from './lib/receiver-process.ts';
import { OVERLOAD_BACKLOG, phasesOf, type PhaseDef, type PhaseShape } from './lib/topology.ts';
import { fmtInt } from './lib/stats.ts';

const SCENARIOS = BASE_SCENARIOS;

const { values: opt } = parseArgs({
  options: {
    scenario: { type: 'string' },
    embedded: { type: 'boolean', default: false },
    cluster: { type: 'boolean', default: false },
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
                     senders2 (fanout's load with one sender process, then two), overload (single's load, unthrottled,
                     against PUBLISH_MAX_BACKLOG=${OVERLOAD_BACKLOG}), scheduled (${SCHEDULED_RATE} events/s, each
                     ${SCHEDULED_DELAY_S} s ahead: the lateness of scheduled deliveries); ${EXTRA_SCENARIOS.length} extra names
  --duration S       seconds of load per phase (default 60; 10 with --quick)
  --embedded         run embedded mode (npm start: every service in one process on the embedded log and
                     PGlite) instead of the four services with Kafka and Postgres; webhook scenarios only
  --cluster          the services on a Kafka cluster of three brokers and a controller (infra/kafka/cluster.sh),
                     topics with replication factor 3 and min.insync.replicas 2, instead of one broker
  --idle-seconds S   seconds the idle phase measures, after 5 s of settling (default 20; 10 with --quick)
  --quick            smoke run: 10 s phases, 5 s ceiling, shorter drains
  --via MODE         http (one event per request, default), batch (POST /publish/batch), kafka (producer to the events topic)
  --concurrency N    publish requests in flight (default 64 for http, 8 for batch and kafka)
  --batch N          events per batch request or Kafka send (default 100)
  --payload BYTES    size of each event's data (default 256)
  --backlog N        max-rate phases hold publishing while more than N deliveries are outstanding (default 5000)
  --max-rate N       events/s the latency scenario takes as 100% when 'single' is not in this run
  --broker-warmup S  seconds of single's load through a deployment of its own before the first phase,
                     then 300/s until the broker's JIT compilers are quiet (at most 90 s), unmeasured,
                     so the broker has compiled its request paths (default 30; 0 with --quick: none)
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
  --baseline         then run embedded mode's default scenarios (${EMBEDDED_DEFAULT}) with the same length options,
                     and write both into bench/results/baseline.{md,json,svg} (and this run's files)
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

/** The command line, parsed and checked. */
interface BenchOptions extends PhaseOptions, PhaseShape {
  scenarios: ScenarioName[];
  /** --scenario as given (or its default), for the label. */
  scenarioArg: string;
  embedded: boolean;
  /** --cluster: three brokers for the services. */
  cluster: boolean;
  brokerWarmupS: number;
  /** Length of the bare ceiling runs at the start and the end. */
  ceilingMs: number;
  ceilingConcurrency: number;
  /** --max-rate: events/s the latency phase takes as 100% when single does not run. */
  maxRate: number | null;
  profile: boolean;
  hangOrigin: string;
  source: boolean;
  keepLogs: boolean;
  label: string;
  outDir: string;
  baseline: boolean;
}

type RawOptions = typeof opt;

function benchOptions(opt: RawOptions): BenchOptions {
  const quick = opt.quick;
  const durationS = Number(opt.duration ?? (quick ? 10 : 60));
  const brokerWarmupS = Number(opt['broker-warmup'] ?? (quick ? 0 : 30));
  if (!(brokerWarmupS >= 0)) throw new Error(`--broker-warmup wants seconds (0 for none), got ${opt['broker-warmup']}`);
  const via = opt.via as Via;
  if (!['http', 'batch', 'kafka'].includes(via)) throw new Error(`--via must be http, batch or kafka`);
  const ceilingMs = Number(opt['ceiling-seconds'] ?? (quick ? 5 : 20)) * 1000;
  const embedded = opt.embedded;
  const scenarioArg = opt.scenario ?? (embedded ? EMBEDDED_DEFAULT : 'all');
  const scenarios = parseScenarios(scenarioArg);
  if (embedded) {
    // One process on its own log and database: no broker to write to, no Postgres to ask, one sender.
    const refused = scenarios.filter((s) => typeOfScenario(s) || s === 'senders2');
    if (refused.length) throw new Error(`--embedded runs webhook scenarios only, not ${refused.join(', ')}`);
    if (via === 'kafka') throw new Error('--embedded has no Kafka to publish to: --via http or batch');
    if (opt['pg-statements']) throw new Error('--embedded has no Postgres server: --pg-statements does not apply');
    if (opt.baseline) throw new Error("--baseline runs embedded mode's default scenarios itself, after the stack's: leave out --embedded");
    if (opt.cluster) throw new Error('--embedded has no Kafka: --cluster does not apply');
  }
  // The baseline is one broker's figures, compared run to run.
  if (opt.cluster && opt.baseline) throw new Error('--baseline records a single broker: leave out --cluster');
  // V8 flags such as --optimize-for-size or --heap-growing-percent are refused in NODE_OPTIONS (the
  // services would exit at start), so an experiment with them needs the command line.
  const nodeFlags = opt['node-flag'];
  for (const f of nodeFlags)
    if (!f.startsWith('--')) throw new Error(`--node-flag wants a flag such as --node-flag=--single-threaded-gc, got ${f}`);
  // One pair's ratio also reads the host's drift between its two minutes (docs/performance.md, "Keep ratio over pairs of phases").
  const hangingPairs = Number(opt['hanging-pairs'] ?? (quick ? 1 : 2));
  hangingPhases(hangingPairs); // throws on a bad --hanging-pairs before anything starts
  const date = new Date().toISOString().slice(0, 10);
  return {
    quick,
    durationS,
    warmupS: Math.min(quick ? 2 : 10, Math.floor(durationS * 0.2)),
    phaseCeilingMs: Math.min(ceilingMs, quick ? 3000 : 5000),
    drainMaxMs: quick ? 30_000 : 90_000,
    via,
    concurrency: Number(opt.concurrency ?? (via === 'http' ? 64 : 8)),
    batchSize: Number(opt.batch),
    payloadBytes: Number(opt.payload),
    backlogCap: Number(opt.backlog),
    pauses: opt.pause.map(parsePause),
    pgStatements: opt['pg-statements'],
    logLevel: opt['log-level'],
    servicesRoot: opt['services-root'],
    serviceEnv: serviceEnvOf(opt.env, embedded),
    nodeFlags,
    hangingPairs,
    latencyFraction: Number(opt['latency-fraction']),
    idleS: Number(opt['idle-seconds'] ?? (quick ? 10 : 20)),
    scenarios,
    scenarioArg,
    embedded,
    cluster: opt.cluster,
    brokerWarmupS,
    ceilingMs,
    ceilingConcurrency: Number(opt['ceiling-concurrency']),
    maxRate: opt['max-rate'] ? Number(opt['max-rate']) : null,
    profile: opt.profile,
    hangOrigin: opt['hang-origin'],
    source: opt.source,
    keepLogs: opt['keep-logs'],
    label:
      opt.label ??
      `${date}-${embedded ? 'embedded-' : ''}${opt.cluster ? 'cluster-' : ''}${scenarioArg === 'all' ? 'all' : scenarios.join('-')}${quick ? '-quick' : ''}`,
    outDir: opt.out,
    baseline: opt.baseline,
  };
}

// The services run with the runtime settings of the production image (its `ENV NODE_OPTIONS=` and
// glibc malloc lines), so the benchmark measures what ships; --env K=V overrides them.
const IMAGE_RUNTIME_ENV = ['NODE_OPTIONS', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'MALLOC_ARENA_MAX'];

function serviceEnvOf(kvs: string[], embedded: boolean): Record<string, string> {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const imageEnv = Object.fromEntries(
    IMAGE_RUNTIME_ENV.flatMap((name) => {
      const value = new RegExp(`^ENV ${name}=("[^"]*"|\\S+)$`, 'm').exec(dockerfile)?.[1];
      return value ? [[name, value.replace(/^"|"$/g, '')]] : [];
    }),
  );
  // Embedded mode runs with npm start's V8 flags (infra/start.sh), not the image's.
  if (embedded) imageEnv.NODE_OPTIONS = startFlags(readFileSync(join(ROOT, 'infra/start.sh'), 'utf8')).join(' ');
  return {
    METRICS_PORT: '0', // several services on one host: each its own free port
    ...imageEnv,
    ...Object.fromEntries(
      kvs.map((kv) => {
        const i = kv.indexOf('=');
        if (i < 1) throw new Error(`--env wants K=V, got ${kv}`);
        return [kv.slice(0, i), kv.slice(i + 1)];
      }),
    ),
  };
}

/** --pause SERVICE@AT+FOR. */
function parsePause(p: string): Pause {
  const m = /^(\w+)@(\d+(?:\.\d+)?)\+(\d+(?:\.\d+)?)$/.exec(p);
  const service = SERVICES.find((s) => s === m?.[1]);
  if (!m || !service)
    throw new Error(`--pause wants SERVICE@AT+FOR (${SERVICES.join(', ')}; seconds into the load), e.g. attempts@20+15; got ${p}`);
  return { service, atS: Number(m[2]), forS: Number(m[3]) };
}

const o = benchOptions(opt);
/** The one run kept in the tree: the baseline the README and docs/performance.md cite. */
const BASELINE_DIR = join(ROOT, 'bench/results');

const started = Date.now();
const stamp = () => new Date().toISOString().slice(11, 19);
const log = (s: string) => console.log(`[${stamp()}] ${s}`);

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
    `switchyard bench ${o.label}: scenarios ${o.scenarios.join(', ')}; ${o.durationS} s per phase (${o.warmupS} s warm-up), via ${o.via}, ` +
      `concurrency ${o.concurrency}${o.quick ? ', QUICK mode' : ''}; load1 ${load1Before} on ${cores()} cores`,
  );
  const runDir = mkdtempSync(join(tmpdir(), 'switchyard-bench-logs.'));
  const profileDir = o.profile ? join(runDir, 'profiles') : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  // What production runs: the built JavaScript, of this checkout or of --services-root (so both
  // sides of an A/B run the same way; a checkout older than infra/build.ts runs its sources).
  const buildScript = join(o.servicesRoot ?? ROOT, 'infra/build.ts');
  const built = o.source || !existsSync(buildScript) ? null : join(runDir, 'build');
  if (built) {
    execFileSync(process.execPath, ['--disable-warning=ExperimentalWarning', buildScript, '--out', built], { stdio: 'pipe' });
    log(`services built into ${built} (npm run build); --source runs the TypeScript instead`);
  } else if (!o.source) {
    log(`${buildScript} not found: the services run from their TypeScript sources`);
  }
  let infra: Infra | null = null;
  if (o.embedded) log('embedded mode: one process per phase on its own log and PGlite; no Kafka, no Postgres');
  else {
    log(`starting Kafka${o.cluster ? ' (a cluster of three brokers)' : ''} and Postgres on free ports`);
    infra = await startInfra(log, { pgStatements: o.pgStatements, cluster: o.cluster });
    process.env.DATABASE_URL = infra.databaseUrl;
    process.env.KAFKA_BROKERS = infra.kafkaBrokers;
  }
  const rx = await startReceiverProcess(o.hangOrigin, log);
  let ctx: PhaseContext | null = null;
  let stopping = false;
  const cleanup = async () => {
    if (stopping) return;
    stopping = true;
    await ctx?.current?.stop().catch(() => {});
    await rx.stop().catch(() => {});
    await infra?.stop().catch(() => {});
    if (!o.keepLogs) rmSync(runDir, { recursive: true, force: true });
    else log(`service logs kept in ${runDir}`);
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      log(`${sig}: stopping`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  let result: RunResult | null = null;
  try {
    const ceiling = async (durationMs: number): Promise<CeilingResult> => {
      await rx.post('/__bench/reset', {});
      log(`bare ceiling: undici (${o.ceilingConcurrency} connections) -> receiver for ${durationMs / 1000} s`);
      const c = await runCeiling({ url: rx.url, durationMs, concurrency: o.ceilingConcurrency, payloadBytes: o.payloadBytes });
      log(`bare ceiling: ${fmtInt(c.ratePerSec)} requests/s, p50 ${c.latencyMs.p50} ms, p99 ${c.latencyMs.p99} ms, load1 ${loadavg()[0]}`);
      return c;
    };
    const ceilingStart = await ceiling(o.ceilingMs);
    let ceilingEnd: CeilingResult | null = null;
    ctx = { opts: o, log, infra, rx, logsDir: runDir, built, profileDir, ceiling, maxRate: o.maxRate, current: null };
    const brokerSettle = o.brokerWarmupS > 0 && infra ? await warmBroker(ctx, phasesOf('single', o)[0] as PhaseDef, o.brokerWarmupS) : null;
    const phases: PhaseResult[] = [];
    const failedPhases: string[] = [];
    for (const s of o.scenarios) {
      for (const def of phasesOf(s, o)) {
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
        if (def.scenario === 'single' && o.maxRate === null) ctx.maxRate = r.delivery.eventsPerSec;
      }
    }
    ceilingEnd = await ceiling(o.ceilingMs);

    // Targets.
    const targets: Target[] = [];
    const find = (s: string, ph = 'main') => phases.find((p) => p.scenario === s && p.phase === ph);
    const tp = throughputTarget(phases, o.embedded ? 'embedded' : 'stack');
    if (tp) targets.push(tp);
    const lat = find('latency');
    if (lat) {
      targets.push({
        target: `p99 publish→receive ≤ 50 ms at ${o.latencyFraction * 100}% load`,
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
    if (!o.embedded) targets.push(memoryTarget(phases, SERVICES));
    targets.push(...moderateTargets(phases, o.embedded ? 'embedded' : 'stack', SERVICES));

    result = {
      meta: {
        date: new Date().toISOString(),
        label: o.label,
        mode: o.quick ? 'quick' : 'full',
        deployment: o.embedded ? 'embedded' : 'stack',
        profiled: o.profile,
        hangOrigin: o.hangOrigin,
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
        logLevel: o.logLevel,
        serviceEnv: o.serviceEnv,
        nodeFlags: o.nodeFlags,
        brokerWarmupS: infra ? o.brokerWarmupS : 0,
        brokerSettle,
        hangingPairs: o.hangingPairs,
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
    writeResult(result, o.outDir, o.label);
    log(`results: ${join(o.outDir, `${o.label}.md`)} (.json, .svg)`);
    for (const tg of targets) logTarget(tg);
    const slowNote = slowPhasesNote(result);
    if (slowNote) log(`warning: ${slowNote}`);
    if (profileDir && existsSync(profileDir)) {
      const keep = join(o.outDir, 'profiles', o.label);
      mkdirSync(keep, { recursive: true });
      for (const f of readdirSync(profileDir)) {
        execFileSync('cp', [join(profileDir, f), join(keep, f)]);
      }
      log(`raw profiles: ${keep} (git-ignored; open them in Chrome DevTools)`);
    }
  } finally {
    await cleanup();
  }
  // With the stack stopped, so that embedded mode has the machine to itself.
  if (o.baseline && result) await recordBaseline(result);
}

function writeResult(r: RunResult, dir: string, base: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${base}.json`), `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(join(dir, `${base}.svg`), chartSvg(r));
  writeFileSync(join(dir, `${base}.md`), markdown(r, `${base}.svg`));
}

const logTarget = (tg: Target) => log(`target: ${tg.target}: ${tg.measured}${tg.met === null ? '' : tg.met ? ' -> met' : ' -> NOT met'}`);

/**
 * --baseline: embedded mode's default scenarios after the stack's, merged into its result as its
 * `embedded` section, then written to bench/results/baseline.* and over this run's files. An
 * embedded run that fails leaves the baseline without that section, and the runner exits with 1.
 */
async function recordBaseline(stack: RunResult): Promise<void> {
  let merged = stack;
  try {
    merged = withEmbedded(stack, await runEmbedded());
  } catch (err) {
    log(`embedded run FAILED: ${(err as Error).message}; the baseline is written without its embedded section`);
    process.exitCode = 1;
  }
  writeResult(merged, o.outDir, o.label);
  writeResult(merged, BASELINE_DIR, 'baseline');
  log(
    `baseline: ${join(BASELINE_DIR, 'baseline.md')} (.json, .svg)${merged.embedded ? ', with embedded mode' : ''}; ${join(o.outDir, `${o.label}.md`)} rewritten`,
  );
}

/** Embedded mode's default scenarios as a child run of this runner, in a directory of its own; its result. */
async function runEmbedded(): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-embedded.'));
  const args = [join(ROOT, 'bench/run.ts'), '--embedded', '--out', dir, '--label', 'embedded', ...embeddedArgs(opt)];
  log(`embedded mode for the baseline (${EMBEDDED_DEFAULT}): node ${args.slice(1).join(' ')}`);
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
  const forward = (sig: NodeJS.Signals) => child.kill(sig);
  process.on('SIGINT', forward).on('SIGTERM', forward);
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`the embedded run exited with ${code}`);
    const r = readRunResult(join(dir, 'embedded.json'));
    // What reruns it by hand, without this run's temporary directory and label.
    r.meta.command = `npm run bench -- --embedded ${embeddedArgs(opt).join(' ')}`.trim();
    return r;
  } finally {
    process.off('SIGINT', forward).off('SIGTERM', forward);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The options of this run that an embedded run takes too: phase lengths, the ceiling, how the services run. */
function embeddedArgs(raw: RawOptions): string[] {
  const out: string[] = raw.quick ? ['--quick'] : [];
  for (const k of [
    'duration',
    'idle-seconds',
    'ceiling-seconds',
    'ceiling-concurrency',
    'payload',
    'log-level',
    'services-root',
  ] as const) {
    const v = raw[k];
    if (v !== undefined) out.push(`--${k}`, v);
  }
  for (const k of ['source', 'profile', 'keep-logs'] as const) if (raw[k]) out.push(`--${k}`);
  for (const e of raw.env) out.push('--env', e);
  for (const f of raw['node-flag']) out.push(`--node-flag=${f}`);
  return out;
}

await main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
