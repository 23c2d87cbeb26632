// One phase of a run: deploy the services (or embedded mode's one process) on a fresh database and
// topic prefix, build the phase's topology through the API, send one probe event through the whole
// pipeline, measure the bare ceiling next to it, then load, sample every process, drain, count and
// return the phase's PhaseResult; the services are stopped whatever happens. Also the broker's
// unmeasured warm-up before the first phase. Everything it reads comes in its PhaseContext: the
// runner's options, the stack (or none: embedded mode), the receiver and the bare ceiling.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { type CeilingResult, type LoadHandle, type LoadResult, startLoad, type Via } from '../load.ts';
import { attemptFigures, attemptsConsumed, storedAttempts, storedRows, succeededAttempts, topicRecords } from './counts.ts';
import { MODERATE_RATE, pipelineProcesses } from './efficiency.ts';
import { type PgStatements, readStatements, resetStatements } from './pg-statements.ts';
import { loadavg, ProcSampler, resetPeakRss, type Tracked } from './proc.ts';
import { summarizeProfile } from './profile.ts';
import type { Receiver, ReceiverStats } from './receiver-process.ts';
import type { BrokerSettle, PhaseResult, SeriesPoint } from './report.ts';
import type { BenchType } from './scenarios.ts';
import { type Deployment, deploy, deployEmbedded, type Infra, SERVICES, type ServiceName } from './stack.ts';
import { EMPTY_SUMMARY, fmtInt, round, sleep, summarize } from './stats.ts';
import { api, type Built, buildTopology, type PhaseDef } from './topology.ts';
import { startTypePeer, type TypePeer } from './type-peers.ts';

// The pipeline's CPU per delivery counts the services and the stores they write to, not the
// receiver or the load generator, which a real deployment does not run.
const STORES = ['kafka', 'postgres'] as const;
type StoreName = (typeof STORES)[number];

// A service stopped mid-load falls behind as a consumer does after a long pause (a stalled disk, a
// stop-the-world collection, a host that froze): what it holds while catching up is the measure.
export interface Pause {
  service: ServiceName;
  atS: number;
  forS: number;
}

/** The runner's options a phase reads (bench/run.ts parses them). */
export interface PhaseOptions {
  quick: boolean;
  /** Seconds of load per phase and of its warm-up (the window starts after it), unless the phase says otherwise. */
  durationS: number;
  warmupS: number;
  /** Length of the ceiling run next to each phase, and the drain's bound. */
  phaseCeilingMs: number;
  drainMaxMs: number;
  via: Via;
  concurrency: number;
  batchSize: number;
  payloadBytes: number;
  backlogCap: number;
  pauses: readonly Pause[];
  pgStatements: boolean;
  logLevel: string;
  servicesRoot: string | undefined;
  serviceEnv: Record<string, string>;
  nodeFlags: string[];
}

export interface PhaseContext {
  opts: PhaseOptions;
  log: (s: string) => void;
  /** Kafka and Postgres; null in embedded mode. */
  infra: Infra | null;
  rx: Receiver;
  logsDir: string;
  /** The built tree the services run from, or null: their TypeScript sources. */
  built: string | null;
  profileDir: string | undefined;
  /** A bare ceiling run now (ms long). */
  ceiling: (ms: number) => Promise<CeilingResult>;
  /** Events/s the `latency` phase takes as 100% (single's, or --max-rate). */
  maxRate: number | null;
  /** The deployment running now (the runner stops it on SIGINT). */
  current: Deployment | null;
}

/** A service's name in the process table: `sender-2` for a second sender instance. */
function trackedName(s: { name: string; instance: number }): string {
  return s.instance > 1 ? `${s.name}-${s.instance}` : s.name;
}

/**
 * Stops `p.service` at `p.atS` s into the load and resumes it `p.forS` s later. Returns what undoes it
 * at once (the phase's end comes first when the load is shorter): a stopped process would not stop.
 */
function schedulePause(p: Pause, dep: Deployment, phase: string, notes: string[], log: (s: string) => void): () => void {
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
  ctx: PhaseContext,
  label: string,
  profileDir: string | undefined,
  o: { env?: Record<string, string>; senders?: number } = {},
): Promise<Deployment> {
  const common = {
    dir: ctx.logsDir,
    label,
    logLevel: ctx.opts.logLevel,
    ...(profileDir ? { profileDir } : {}),
    ...(ctx.opts.servicesRoot ? { servicesRoot: ctx.opts.servicesRoot } : {}),
    ...(ctx.built ? { built: ctx.built } : {}),
    env: { ...o.env, ...ctx.opts.serviceEnv },
    nodeFlags: ctx.opts.nodeFlags,
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
  ctx: PhaseContext,
  built: Built,
  o: { ratePerSec: number | null; durationMs: number; received: () => number; ungated?: boolean; scheduleS?: number },
): LoadHandle {
  const { via, concurrency, batchSize, payloadBytes, backlogCap } = ctx.opts;
  const holder: { load?: LoadHandle } = {};
  const load = startLoad({
    via,
    gatewayUrl: dep.gatewayUrl,
    apiKey: dep.apiKey,
    ...(ctx.infra
      ? { kafka: { brokers: ctx.infra.kafkaBrokers.split(','), topicPrefix: dep.env.KAFKA_TOPIC_PREFIX as string, partitions: 12 } }
      : {}),
    pick: (n) => ({ tenant_id: built.tenants[n % built.tenants.length] as string, topic: 'bench.event' }),
    ...(o.ratePerSec !== null ? { ratePerSec: o.ratePerSec } : {}),
    concurrency,
    batchSize,
    durationMs: o.durationMs,
    payloadBytes,
    ...(o.scheduleS !== undefined ? { deliverAfterMs: o.scheduleS * 1000 } : {}),
    ...(o.ratePerSec !== null || o.ungated
      ? {}
      : { gate: () => (holder.load?.stats.eventsSent ?? 0) * built.healthyPerEvent - o.received() < backlogCap }),
  });
  holder.load = load;
  return load;
}

// The broker's warm-up ends once its JIT compiler threads spend less than this a second, over
// windows of WARMUP_WINDOW_MS, or after WARMUP_SETTLE_MAX_MS at the moderate rate.
const JIT_QUIET_MS_PER_S = 25;
const WARMUP_WINDOW_MS = 5000;
const WARMUP_SETTLE_MAX_MS = 90_000;

/**
 * Single's load (`single`: its phase definition) through a deployment of its own, unmeasured, before
 * the first phase, then the moderate rate until the broker's compilers are quiet. The services start
 * afresh for every phase and warm up in its first seconds; the broker runs through the whole run, and
 * a cold one (a JVM) compiles its request paths under load. Full speed does not compile them all: a
 * fixed rate takes paths of its own (produces of a few records, fetches that wait), which a slow host
 * still compiled through rate300's window after 90 s of single's load (docs/performance.md, "Broker
 * warm-up before the first phase"). Progress, not a clock, ends the second part: its windows are
 * measured, and the warm-up ends at the first quiet one.
 */
export async function warmBroker(ctx: PhaseContext, single: PhaseDef, seconds: number): Promise<BrokerSettle> {
  const { log } = ctx;
  const infra = ctx.infra as Infra;
  log(`broker warm-up: ${seconds} s of single's load, then ${MODERATE_RATE}/s until its compilers are quiet; unmeasured`);
  const dep = await deployServices(ctx, 'broker-warmup', undefined);
  ctx.current = dep;
  try {
    const built = await buildTopology(dep, ctx.rx, single.topology);
    let received = 0;
    const run = async (ratePerSec: number | null, durationMs: number, each?: () => Promise<boolean>) => {
      const load = startPhaseLoad(dep, ctx, built, { ratePerSec, durationMs, received: () => received });
      let loadDone = false;
      const result = load.done.finally(() => {
        loadDone = true;
      });
      while (!loadDone) {
        await Promise.race([dep.crashed, result, sleep(250)]);
        received = (await ctx.rx.stats()).received.ok;
        if (each && !loadDone && (await each())) load.stop();
      }
      return result;
    };
    const full = await run(null, seconds * 1000);
    log(`broker warm-up: ${fmtInt(full.eventsAccepted)} events published at full speed`);
    const broker = new ProcSampler([{ name: 'kafka', pids: () => infra.kafkaPids() }]);
    let windowStart = performance.now();
    let jit = Number.NaN;
    const moderate = await run(MODERATE_RATE, WARMUP_SETTLE_MAX_MS, async () => {
      if (performance.now() - windowStart < WARMUP_WINDOW_MS) return false;
      windowStart = performance.now();
      jit = broker.sample()?.procs.kafka?.jitMsPerS ?? 0;
      log(`broker warm-up: its compilers ${round(jit, 1)} ms/s at ${MODERATE_RATE}/s`);
      return jit < JIT_QUIET_MS_PER_S;
    });
    const quiet = jit < JIT_QUIET_MS_PER_S;
    const settled = quiet ? 'quiet' : `still compiling (${round(jit, 1)} ms/s) after ${WARMUP_SETTLE_MAX_MS / 1000} s`;
    log(
      `broker warm-up done: ${fmtInt(moderate.eventsAccepted)} events at ${MODERATE_RATE}/s, compilers ${settled}; ${fmtInt(received)} delivered`,
    );
    return { seconds: round(moderate.eventsAccepted / MODERATE_RATE, 0), jitMsPerS: round(jit, 1), quiet };
  } finally {
    await dep.stop();
    ctx.current = null;
  }
}

/** Another type's peer for one phase (its deliveries are read from their attempts), and what stops it. */
async function startPhasePeer(
  def: PhaseDef,
  ctx: PhaseContext,
  name: string,
): Promise<{ typePeer: { type: BenchType; peer: TypePeer } | undefined; stopPeer: () => Promise<void> }> {
  const peerTeardowns: Array<() => unknown> = [];
  const stopPeer = async () => {
    for (const fn of peerTeardowns.splice(0).reverse()) await Promise.resolve(fn()).catch(() => {});
  };
  const destType = def.destType && def.destType !== 'webhook' ? def.destType : null;
  if (!destType) return { typePeer: undefined, stopPeer };
  ctx.log(`${name}: starting the ${destType} peer`);
  try {
    const peer = await startTypePeer(destType, { teardown: (fn) => peerTeardowns.push(fn) }, ctx.infra as Infra);
    return { typePeer: { type: destType, peer }, stopPeer };
  } catch (err) {
    await stopPeer();
    throw err;
  }
}

/** What one phase's parts share while it runs. */
interface Running {
  name: string;
  def: PhaseDef;
  ctx: PhaseContext;
  dep: Deployment;
  built: Built;
  /** The phase's database (the stack's); null in embedded mode. */
  db: pg.Client | null;
  /** Another type's peer: deliveries are read from the attempts. */
  viaAttempts: boolean;
  /** Attempts stored so far; null where the deployment cannot tell (see attemptsConsumed). */
  attemptCount: () => Promise<number | null>;
  notes: string[];
}

/** Deliveries so far: at the receiver, or successful attempts of `topic` where the peer cannot say. */
const deliveredSoFar = async (r: Running, topic: string): Promise<number> =>
  r.viaAttempts ? succeededAttempts(r.db as pg.Client, topic) : (await r.ctx.rx.stats()).received.ok;

/** One event through the whole pipeline: every consumer group has joined and routes, delivers, stores. */
async function probePipeline(r: Running): Promise<void> {
  await r.ctx.rx.post('/__bench/reset', {});
  const probeStart = Date.now();
  const probe = await api(r.dep, 'POST', '/api/v1/publish', {
    tenant_id: r.built.tenants[0],
    topic: 'bench.probe',
    data: { probe: true },
  });
  if (probe.status !== 202) throw new Error(`probe publish: ${probe.status} ${JSON.stringify(probe.body)}`);
  for (;;) {
    const got = await deliveredSoFar(r, 'bench.probe');
    const stored = got >= r.built.healthyPerEvent ? await r.attemptCount() : 0;
    if (got >= r.built.healthyPerEvent && (stored === null || stored >= r.built.healthyPerEvent)) break;
    if (Date.now() - probeStart > 120_000) throw new Error('the probe event was not delivered and stored within 120 s');
    await Promise.race([r.dep.crashed, sleep(200)]);
  }
  r.ctx.log(`${r.name}: pipeline ready (probe took ${((Date.now() - probeStart) / 1000).toFixed(1)} s)`);
}

/** The processes sampled: the services, the receiver, the stores (not the runner's own Postgres backend) and the runner. */
function trackedProcesses(r: Running, runnerBackend: number): Tracked[] {
  const infra = r.ctx.infra;
  // A Record, so a store added to STORES cannot go unsampled (and count no CPU).
  const storePids: Record<StoreName, () => number[]> | null = infra && {
    kafka: infra.kafkaPids,
    postgres: () => infra.postgresPids().filter((p) => p !== runnerBackend),
  };
  const rx = r.ctx.rx;
  return [
    ...r.dep.services.map((s) => ({ name: trackedName(s), pids: () => (s.child.pid ? [s.child.pid] : []) })),
    { name: 'receiver', pids: () => (rx.child.pid ? [rx.child.pid] : []) },
    ...(storePids ? STORES.map((name) => ({ name, pids: storePids[name] })) : []),
    { name: 'bench', pids: () => [process.pid] },
  ];
}

/** The measured part's clock: the load's start, the window (after the warm-up) and the phase's length. */
interface Window {
  loadStart: number;
  from: number;
  to: number;
  phaseS: number;
}

interface Sampled {
  drainS: number;
  pgStatements: PgStatements | null;
  /** Attempts stored since the load started, by time. */
  attemptSeries: Array<{ t: number; n: number }>;
}

/**
 * Runs until the load is done and the drain has caught up (or given up): counts deliveries and stored
 * attempts, opens and reads Postgres's statements over the window, prints progress.
 */
async function sampleUntilDrained(
  r: Running,
  o: {
    load: LoadHandle;
    loadDone: () => boolean;
    sampler: ProcSampler;
    tracked: Tracked[];
    w: Window;
    idle: boolean;
    /** Null: stored attempts are not counted, the drain goes by deliveries alone. */
    attempts0: number | null;
  },
  setReceived: (n: number) => void,
): Promise<Sampled> {
  const { ctx, name, db, built, notes } = r;
  const { load, sampler, tracked, w, idle } = o;
  // Stored attempts are counted every second; in embedded mode from its /metrics, every 5 s, which
  // costs the measured process less; never while idle, where nothing is stored and a query would
  // be the only work the pipeline does; nor where the deployment cannot count them (attempts0 null).
  const attemptPollMs = idle ? Infinity : db ? 1000 : 5000;
  const attemptSeries: Array<{ t: number; n: number }> = [{ t: w.loadStart, n: 0 }];
  let lastPrint = Date.now();
  let lastAttemptPoll = 0;
  let prev = { t: w.loadStart, acc: 0, rx: 0, att: 0 };
  const progressEvery = ctx.opts.quick ? 2000 : 5000;
  const drainMaxMs = ctx.opts.drainMaxMs;
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
    await Promise.race([r.dep.crashed, sleep(250)]);
    const s = await ctx.rx.stats();
    const received = r.viaAttempts ? await succeededAttempts(db as pg.Client, 'bench.event') : s.received.ok;
    setReceived(received);
    const now = Date.now();
    if (ctx.opts.pgStatements && !statementsOpened && now >= w.from) {
      statementsOpened = now;
      await resetStatements(db as pg.Client);
    }
    if (statementsOpened && !pgStatements && now >= w.to) await readWindow();
    if (o.attempts0 !== null && (now - lastAttemptPoll >= attemptPollMs || (loadEnd && now - lastAttemptPoll >= 1000 && !idle))) {
      lastAttemptPoll = now;
      attempts = ((await r.attemptCount()) ?? 0) - o.attempts0;
      attemptSeries.push({ t: now, n: attempts });
    }
    if (received > lastProgress.rx || attempts > lastProgress.att) lastProgress = { t: now, rx: received, att: attempts };
    if (o.loadDone() && !loadEnd) {
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
        : `${Math.round((now - w.loadStart) / 1000)}s/${w.phaseS}s`;
      ctx.log(
        `${name} ${phaseClock}: published ${fmtInt(load.stats.eventsAccepted)} (${fmtInt((load.stats.eventsAccepted - prev.acc) / dt)}/s), ` +
          `delivered ${fmtInt(received)} (${fmtInt((received - prev.rx) / dt)}/s), attempts ${fmtInt(attempts)} (${fmtInt((attempts - prev.att) / dt)}/s), ` +
          `outstanding ${fmtInt(Math.max(0, expected - received))}, hung ${s.hungNow} | cpu% ${cpu} | load1 ${loadavg()[0]}`,
      );
      prev = { t: now, acc: load.stats.eventsAccepted, rx: received, att: attempts };
      lastPrint = now;
    }
    if (loadEnd) {
      const caughtUp = received - s.duplicates.ok >= expected && (o.attempts0 === null || attempts >= expected);
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
  return { drainS, pgStatements, attemptSeries };
}

/** Published, delivered and stored per second of the load, from the load's and the receiver's (or the attempts') series. */
function perSecond(
  lr: LoadResult,
  series: ReceiverStats,
  attemptsAt: (t: number) => number,
  w: Pick<Window, 'loadStart' | 'phaseS'>,
): SeriesPoint[] {
  const sOf = (t: number) => Math.floor((t - w.loadStart) / 1000);
  const seriesOut: SeriesPoint[] = [];
  const lastS = Math.max(w.phaseS, sOf(Date.now()));
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
    const t0 = w.loadStart + k * 1000;
    seriesOut.push({
      s: k,
      published: pubPerS.get(k) ?? 0,
      delivered: okPerS.get(k) ?? 0,
      attempts: Math.max(0, Math.round(attemptsAt(t0 + 1000) - attemptsAt(t0))),
    });
  }
  return seriesOut;
}

/** Attempts stored by time t, linearly between polls. */
function interpolate(points: ReadonlyArray<{ t: number; n: number }>): (t: number) => number {
  return (t) => {
    for (let i = 1; i < points.length; i++) {
      const a = points[i - 1] as { t: number; n: number };
      const b = points[i] as { t: number; n: number };
      if (t <= b.t) return a.n + ((b.n - a.n) * (t - a.t)) / Math.max(1, b.t - a.t);
    }
    return points.at(-1)?.n ?? 0;
  };
}

/**
 * The measured part of a phase, its services up and probed: the load, sampling every process, the
 * drain, the counts, and the phase's result with its measurement window (for the profiles).
 * `undoPauses` collects what resumes a paused service.
 */
async function measure(
  r: Running,
  o: {
    targetRate: number | null;
    phaseS: number;
    phaseWarmupS: number;
    ceilingNear: CeilingResult;
    attempts0: number | null;
    runnerBackend: number;
    undoPauses: Array<() => void>;
  },
): Promise<{ result: PhaseResult; window: { from: number; to: number } }> {
  const { ctx, name, def, dep, built, db, notes } = r;
  const { opts, log } = ctx;
  const { targetRate, phaseS, phaseWarmupS, ceilingNear, attempts0 } = o;
  const idle = targetRate === 0;
  const embedded = !ctx.infra;
  const tracked = trackedProcesses(r, o.runnerBackend);
  // Embedded mode's first start of a fresh data directory peaks at ~1.1 GB (PGlite's initdb;
  // docs/performance.md, "Embedded mode"): its peak is read from here on, the phase's own.
  if (embedded)
    for (const s of dep.services)
      if (s.child.pid && !resetPeakRss(s.child.pid)) notes.push(`${s.name}: peak RSS could not be reset; it includes start-up`);
  const sampler = new ProcSampler(tracked);
  sampler.start(1000);

  let received = 0;
  const load = startPhaseLoad(dep, ctx, built, {
    ratePerSec: targetRate,
    durationMs: phaseS * 1000,
    received: () => received,
    ...(r.def.ungated ? { ungated: true } : {}),
    ...(r.def.scheduleS !== undefined ? { scheduleS: r.def.scheduleS } : {}),
  });
  const loadStart = Date.now();
  for (const p of opts.pauses) o.undoPauses.push(schedulePause(p, dep, name, notes, log));
  const w: Window = { loadStart, from: loadStart + phaseWarmupS * 1000, to: loadStart + phaseS * 1000, phaseS };
  let loadDone = false;
  const loadResult = load.done.finally(() => {
    loadDone = true;
  });
  const sampled = await sampleUntilDrained(r, { load, loadDone: () => loadDone, sampler, tracked, w, idle, attempts0 }, (n) => {
    received = n;
  });
  sampler.stop();
  const lr = await loadResult;
  const stored = attempts0 === null ? null : await r.attemptCount();
  const attempts = stored === null || attempts0 === null ? null : stored - attempts0;
  if (attempts === null) notes.push('stored attempts not counted: this deployment serves no metrics to count them from');
  else sampled.attemptSeries.push({ t: Date.now(), n: attempts });

  // Scheduled events arrive that much after the load that published them: the window moves with them.
  const shift = (def.scheduleS ?? 0) * 1000;
  const final = r.viaAttempts
    ? await attemptFigures(db as pg.Client, w.from + shift, w.to + shift)
    : await ctx.rx.stats(`from=${w.from + shift}&to=${w.to + shift}&latency=1`);
  const series = r.viaAttempts
    ? await attemptFigures(db as pg.Client, loadStart, Date.now())
    : await ctx.rx.stats(`from=${loadStart}&series=1`);
  // Rows by status, events and Kafka's records: the stack only (embedded mode's are inside its process).
  const rows = await storedRows(db);
  const kafkaRecords = ctx.infra ? await topicRecords(ctx.infra.kafkaBrokers, dep.env.KAFKA_TOPIC_PREFIX as string) : {};

  const windowS = (w.to - w.from) / 1000;
  const at = interpolate(sampled.attemptSeries);
  const acceptedInWindow = lr.accepted.window(w.from, w.to).reduce((a, b) => a + b, 0);
  const deliveredPerSec = final.inWindow.ok / windowS;
  const expected = lr.eventsAccepted * built.healthyPerEvent;
  const unique = final.received.ok - final.duplicates.ok;
  const machine = sampler.summary(w.from, w.to);
  const pipeline = pipelineProcesses(embedded ? 'embedded' : 'stack', SERVICES);
  const pipelineCpu = [...pipeline, ...dep.services.filter((x) => x.instance > 1).map(trackedName)].reduce(
    (sum, n) => sum + (machine.procs[n]?.cpuAvgPct ?? 0),
    0,
  );
  if (lr.behindMaxMs > 100) notes.push(`the load generator fell up to ${lr.behindMaxMs} ms behind its schedule`);
  if (final.received.ok === 0 && !idle) notes.push('nothing was delivered');
  if (lr.rejected['429'])
    notes.push(`${lr.rejected['429']} publishes refused with 429 by the admission bound (PUBLISH_MAX_BACKLOG), retried after Retry-After`);

  const result: PhaseResult = {
    scenario: def.scenario,
    phase: def.phase,
    topology: def.topology,
    via: opts.via,
    targetRate,
    durationS: phaseS,
    warmupS: phaseWarmupS,
    backlogCap: targetRate ? null : opts.backlogCap,
    latencyFrom: r.viaAttempts ? 'attempt' : 'peer',
    ...(def.scheduleS !== undefined ? { scheduledS: def.scheduleS } : {}),
    ...(def.senders ? { senders: def.senders } : {}),
    publish: {
      eventsSent: lr.eventsSent,
      eventsAccepted: lr.eventsAccepted,
      rejected: lr.rejected,
      firstErrors: lr.firstErrors,
      acceptedPerSec: Math.round(acceptedInWindow / windowS),
      latencyMs: summarize(lr.latency.window(w.from, w.to)),
      behindMaxMs: lr.behindMaxMs,
      gatedS: round(lr.gatedMs / 1000 / opts.concurrency, 1),
    },
    delivery: {
      healthyPerEvent: built.healthyPerEvent,
      healthyDestinations: built.healthyDestinations,
      deliveredPerSec: Math.round(deliveredPerSec),
      eventsPerSec: Math.round(deliveredPerSec / Math.max(1, built.healthyPerEvent)),
      perDestinationPerSec: round(deliveredPerSec / Math.max(1, built.healthyDestinations), 2),
      attemptsPerSec: attempts === null ? null : Math.round((at(w.to) - at(w.from)) / windowS),
      latencyMs: final.latency?.ok ?? { ...EMPTY_SUMMARY },
      expected,
      received: final.received.ok,
      duplicates: final.duplicates.ok,
      hangRepeats: final.duplicates.hang,
      missing: Math.max(0, expected - unique),
      hungArrivals: final.received.hang,
      drainS: sampled.drainS,
      verify: final.verify,
    },
    stored: { attempts, ...rows },
    kafkaRecords,
    machine,
    efficiency: {
      pipelineCpuPct: round(pipelineCpu, 1),
      cpuMsPerDelivery: round((pipelineCpu * 10) / Math.max(1, deliveredPerSec), 3),
    },
    series: perSecond(lr, series, at, w),
    profiles: [],
    ...(sampled.pgStatements ? { pgStatements: sampled.pgStatements } : {}),
    ceilingNear,
    ceilingRatio: round(deliveredPerSec / Math.max(1, ceilingNear.ratePerSec), 3),
    notes,
  };
  const d = result.delivery;
  log(
    `${name} done: ${fmtInt(result.publish.acceptedPerSec)} events/s published, ${fmtInt(d.deliveredPerSec)} deliveries/s (${(result.ceilingRatio * 100).toFixed(0)}% of ceiling), ` +
      `${d.attemptsPerSec === null ? 'uncounted' : fmtInt(d.attemptsPerSec)} attempts/s stored, ${result.efficiency.cpuMsPerDelivery} pipeline CPU ms/delivery; publish->receive p50 ${d.latencyMs.p50} p99 ${d.latencyMs.p99} max ${d.latencyMs.max} ms; ` +
      `publish API p50 ${result.publish.latencyMs.p50} p99 ${result.publish.latencyMs.p99} ms; missing ${d.missing}, duplicates ${d.duplicates}, ` +
      `signatures ${d.verify.ok}/${d.verify.checked} ok; load1 ${result.machine.load1Start} -> ${result.machine.load1End}, others ${result.machine.otherAvgPct}% cpu`,
  );
  if (def.scheduleS !== undefined)
    log(
      `${name}: lateness (deliver_at -> receive) p50 ${d.latencyMs.p50} p95 ${d.latencyMs.p95} max ${d.latencyMs.max} ms over ${d.latencyMs.count} deliveries`,
    );
  return { result, window: { from: w.from, to: w.to } };
}

/** Runs one phase (see the header) and returns its result; throws when it cannot run (its services crashed, the probe was not delivered). */
export async function runPhase(def: PhaseDef, ctx: PhaseContext): Promise<PhaseResult> {
  const { opts, log } = ctx;
  const name = `${def.scenario}/${def.phase}`;
  const targetRate =
    def.rate === 'max' ? null : 'fixed' in def.rate ? def.rate.fixed : Math.max(1, Math.round((ctx.maxRate ?? 0) * def.rate.share));
  if (def.rate !== 'max' && 'share' in def.rate && !ctx.maxRate)
    throw new Error(`${name} needs the max rate: run 'single' first or pass --max-rate`);
  const phaseS = def.durationS ?? opts.durationS;
  const phaseWarmupS = def.warmupS ?? opts.warmupS;
  const { typePeer, stopPeer } = await startPhasePeer(def, ctx, name);
  log(`${name}: ${def.title}; starting services`);
  const env = { ...(typePeer?.peer.env ?? {}), ...(def.env ?? {}) };
  const dep = await deployServices(ctx, `${def.scenario}-${def.phase}`, ctx.profileDir, {
    ...(Object.keys(env).length ? { env } : {}),
    ...(def.senders ? { senders: def.senders } : {}),
  }).catch(async (err: unknown) => {
    await stopPeer();
    throw err;
  });
  ctx.current = dep;
  const notes: string[] = [];
  const undoPauses: Array<() => void> = [];
  let profileWindow: { from: number; to: number } | null = null;
  let result: PhaseResult | null = null;
  // Embedded mode's database is inside its process: the runner reads its metrics instead.
  const db = ctx.infra ? new pg.Client({ connectionString: dep.env.DATABASE_URL }) : null;
  await db?.connect();
  // The runner's own backend (it counts stored attempts) is not pipeline work.
  const runnerBackend = db ? Number((await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid) : 0;
  try {
    const built = await buildTopology(dep, ctx.rx, def.topology, typePeer);
    const r: Running = {
      name,
      def,
      ctx,
      dep,
      built,
      db,
      viaAttempts: Boolean(typePeer),
      attemptCount: () => (db ? storedAttempts(db) : attemptsConsumed(dep.gatewayUrl)),
      notes,
    };
    log(
      `${name}: ${built.tenants.length} tenants, ${built.healthyDestinations} healthy + ${built.hangingDestinations} hanging destinations; probing the pipeline`,
    );
    await probePipeline(r);
    await sleep(1000);
    // The ceiling right next to this phase, so its ratio compares like with like on a busy machine.
    const ceilingNear = await ctx.ceiling(opts.phaseCeilingMs);
    await ctx.rx.post('/__bench/reset', {});
    const attempts0 = await r.attemptCount();
    const requests0 = typePeer?.peer.requests?.();
    const connections0 = typePeer?.peer.connections?.();
    const storedBefore = requests0 === undefined ? null : (await storedRows(db)).attemptsByStatus;

    const measured = await measure(r, { targetRate, phaseS, phaseWarmupS, ceilingNear, attempts0, runnerBackend, undoPauses });
    result = measured.result;
    profileWindow = measured.window;
    if (requests0 !== undefined && storedBefore && typePeer?.peer.requests) {
      // Over the load and its drain (the runner's own calls to the peer are not counted).
      const sum = (m: Record<string, number>) => Object.values(m).reduce((a, b) => a + b, 0);
      const attempts = sum(result.stored.attemptsByStatus) - sum(storedBefore);
      const requests = typePeer.peer.requests() - requests0;
      result.peerRequests = {
        requests,
        attempts,
        perThousand: attempts > 0 ? Math.round((requests / attempts) * 1000 * 10) / 10 : 0,
        ...(connections0 !== undefined && typePeer.peer.connections ? { connections: typePeer.peer.connections() - connections0 } : {}),
      };
    }
    return result;
  } finally {
    for (const undo of undoPauses.splice(0)) undo();
    await db?.end().catch(() => {});
    log(`${name}: stopping services`);
    await dep.stop();
    ctx.current = null;
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
