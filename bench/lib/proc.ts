// CPU and memory of processes from /proc (Linux): sampled periodically, summarised over a window.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

interface PidStat {
  ppid: number;
  /** utime + stime, in clock ticks. */
  ticks: number;
}

function readStat(pid: number): PidStat | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) };
  } catch {
    return null;
  }
}

interface Mem {
  rssKb: number;
  hwmKb: number;
  /** Resident anonymous memory: the process's own (heaps, buffers, stacks). */
  anonKb: number;
  /**
   * Resident pages of mapped files: for a Node service mostly the node binary's code, which the
   * page cache shares with every other process running the same binary.
   */
  fileKb: number;
}

/** The lines of `/proc/PID/status` read, in kB; one pass over the file per process and sample. */
const MEM_LINES = /^(VmRSS|VmHWM|RssAnon|RssFile):\s+(\d+)/gm;

function readMem(pid: number): Mem {
  try {
    const kb: Record<string, number> = {};
    for (const [, field = '', value] of readFileSync(`/proc/${pid}/status`, 'utf8').matchAll(MEM_LINES)) kb[field] = Number(value);
    return { rssKb: kb.VmRSS ?? 0, hwmKb: kb.VmHWM ?? 0, anonKb: kb.RssAnon ?? 0, fileKb: kb.RssFile ?? 0 };
  } catch {
    return { rssKb: 0, hwmKb: 0, anonKb: 0, fileKb: 0 };
  }
}

/**
 * Resets the process's peak RSS (VmHWM) to its current RSS (`5` to /proc/PID/clear_refs, Linux 4.0+),
 * so the peak read later is the peak since now; false where the kernel or permissions refuse.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Every process whose parent is `parent` (one level: Postgres backends under the postmaster). */
export function childrenOf(parent: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const st = readStat(pid);
    if (st?.ppid === parent) out.push(pid);
  }
  return out;
}

/**
 * On-CPU time, run-queue wait and times put on a CPU of one thread, from
 * `/proc/PID/task/TID/schedstat` (on-CPU ns, run-queue wait ns, timeslices). On a machine shared by
 * every process of the benchmark this wait is the delay a hop adds without spending CPU of its own.
 */
interface ThreadSched {
  cpuNs: number;
  waitNs: number;
  runs: number;
  /** A JIT compiler thread (see isJitThread). */
  jit: boolean;
}

/**
 * HotSpot names its compiler threads "C1 CompilerThread0", "C2 CompilerThread1"... (the kernel keeps
 * 15 characters). Their CPU is a JVM warming up: the broker compiling its request paths.
 */
export const isJitThread = (comm: string): boolean => /^C[12] CompilerThre/.test(comm);

/** `known`: the previous sample's threads; a thread id not among them (new, or reused) has its name read. */
function readThreadSched(pid: number, known: ReadonlyMap<number, ThreadSched>): Map<number, ThreadSched> {
  const out = new Map<number, ThreadSched>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const [cpu = '0', wait = '0', slices = '0'] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(' ');
      const jit = known.get(Number(tid))?.jit ?? isJitThread(readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8'));
      out.set(Number(tid), { cpuNs: Number(cpu), waitNs: Number(wait), runs: Number(slices), jit });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

function readSystemCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

export const loadavg = (): [number, number, number] => {
  const [a = 0, b = 0, c = 0] = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
  return [a, b, c];
};

export interface Tracked {
  name: string;
  /** Current pids of this process group (one pid, or a server and its children). */
  pids(): number[];
}

export interface ProcPoint {
  /** CPU since the previous sample, in percent of one core. */
  cpuPct: number;
  rssMb: number;
  /** The anonymous and file-backed parts of rssMb. */
  rssAnonMb: number;
  rssFileMb: number;
  /** Run-queue wait of all its threads since the previous sample, ms per second. */
  waitMsPerS: number;
  /** Times its threads were put on a CPU since the previous sample, per second. */
  runsPerS: number;
  /** CPU of its JIT compiler threads since the previous sample, ms per second (a JVM's; 0 for Node). */
  jitMsPerS: number;
}

export interface Sample {
  t: number;
  load1: number;
  /** Busy CPU of the whole machine since the previous sample, percent of one core (2 cores = 200). */
  systemPct: number;
  procs: Record<string, ProcPoint>;
}

export interface ProcSummary {
  cpuAvgPct: number;
  cpuMaxPct: number;
  rssAvgMb: number;
  rssMaxMb: number;
  /** Peak RSS of the (main) process over its life, from VmHWM. */
  hwmMb: number;
  /** RSS when sampling started (the services idle after start-up and one probe event). */
  rssStartMb: number;
  /**
   * The sample of highest RSS split in two: anonymous memory (the process's own) and resident pages
   * of mapped files (mostly the node binary, shared with the other services). Absent in results
   * before 2026-11-25.
   */
  rssAtMax?: { anonMb: number; fileMb: number };
  /** Highest anonymous memory (RssAnon) over the samples: what the memory target counts (absent in older results). */
  anonMaxMb?: number;
  /** Run-queue wait of all its threads, ms per second of the window (absent in older results). */
  waitMsPerS?: number;
  /** That wait divided by the times its threads were put on a CPU: the average delay of a wake-up, µs. */
  waitUsPerRun?: number;
  /** Times its threads were put on a CPU, per second of the window: its wake-ups (absent in results before 2026-11-24). */
  runsPerS?: number;
  /** CPU of its JIT compiler threads, ms per second of the window (absent in results before 2026-11-25). */
  jitMsPerS?: number;
}

export interface WindowSummary {
  seconds: number;
  load1Start: number;
  load1End: number;
  load1Max: number;
  systemAvgPct: number;
  /** Busy CPU not accounted to any tracked process (other engineers' work, the kernel), percent of one core. */
  otherAvgPct: number;
  procs: Record<string, ProcSummary>;
}

/** Samples the tracked processes every `intervalMs`; keeps all samples (a few per second at most). */
export class ProcSampler {
  readonly samples: Sample[] = [];
  private readonly tracked: Tracked[];
  private readonly last = new Map<number, number>();
  /** By thread id: a sum per process would fall, and read negative, whenever one of its threads ended. */
  private lastSched = new Map<number, ThreadSched>();
  private lastSys = readSystemCpu();
  private lastT = performance.now();
  private readonly hwm = new Map<string, number>();
  private readonly rssStart = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(tracked: Tracked[]) {
    this.tracked = tracked;
    this.sample(true);
  }

  start(intervalMs = 1000): void {
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
  }

  sample(prime = false): Sample | null {
    const t = performance.now();
    const dt = (t - this.lastT) / 1000;
    const sys = readSystemCpu();
    const procs: Record<string, ProcPoint> = {};
    const sched = new Map<number, ThreadSched>();
    for (const tr of this.tracked) {
      let ticks = 0;
      let rssKb = 0;
      let hwmKb = 0;
      let anonKb = 0;
      let fileKb = 0;
      let waitNs = 0;
      let runs = 0;
      let jitNs = 0;
      for (const pid of tr.pids()) {
        const st = readStat(pid);
        if (!st) continue;
        const prev = this.last.get(pid);
        ticks += prev === undefined ? (prime ? 0 : st.ticks) : st.ticks - prev;
        this.last.set(pid, st.ticks);
        for (const [tid, th] of readThreadSched(pid, this.lastSched)) {
          // A thread first seen after the first sample started since the previous one: all of it counts.
          const prevTh = this.lastSched.get(tid) ?? (prime ? th : { cpuNs: 0, waitNs: 0, runs: 0 });
          waitNs += th.waitNs - prevTh.waitNs;
          runs += th.runs - prevTh.runs;
          if (th.jit) jitNs += th.cpuNs - prevTh.cpuNs;
          sched.set(tid, th);
        }
        const m = readMem(pid);
        rssKb += m.rssKb;
        anonKb += m.anonKb;
        fileKb += m.fileKb;
        hwmKb = Math.max(hwmKb, m.hwmKb);
      }
      this.hwm.set(tr.name, Math.max(this.hwm.get(tr.name) ?? 0, hwmKb));
      procs[tr.name] = {
        cpuPct: dt > 0 ? (ticks / CLK_TCK / dt) * 100 : 0,
        rssMb: rssKb / 1024,
        rssAnonMb: anonKb / 1024,
        rssFileMb: fileKb / 1024,
        waitMsPerS: dt > 0 ? waitNs / 1e6 / dt : 0,
        runsPerS: dt > 0 ? runs / dt : 0,
        jitMsPerS: dt > 0 ? jitNs / 1e6 / dt : 0,
      };
      if (prime) this.rssStart.set(tr.name, rssKb / 1024);
    }
    this.lastSched = sched;
    const sysTotal = sys.total - this.lastSys.total;
    const systemPct = sysTotal > 0 ? ((sys.busy - this.lastSys.busy) / sysTotal) * 100 * cores() : 0;
    this.lastSys = sys;
    this.lastT = t;
    if (prime) return null;
    const s: Sample = { t: Date.now(), load1: loadavg()[0], systemPct, procs };
    this.samples.push(s);
    return s;
  }

  /** Averages over samples taken in [from, to] (epoch ms). */
  summary(from = -Infinity, to = Infinity): WindowSummary {
    const w = this.samples.filter((s) => s.t >= from && s.t <= to);
    const avg = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
    const procs: Record<string, ProcSummary> = {};
    let tracked = 0;
    for (const tr of this.tracked) {
      const cpu = w.map((s) => s.procs[tr.name]?.cpuPct ?? 0);
      const rss = w.map((s) => s.procs[tr.name]?.rssMb ?? 0);
      const atMax = w.reduce<ProcPoint | undefined>((best, s) => {
        const p = s.procs[tr.name];
        return p && (!best || p.rssMb > best.rssMb) ? p : best;
      }, undefined);
      const waitMs = avg(w.map((s) => s.procs[tr.name]?.waitMsPerS ?? 0));
      const runs = avg(w.map((s) => s.procs[tr.name]?.runsPerS ?? 0));
      const jitMs = avg(w.map((s) => s.procs[tr.name]?.jitMsPerS ?? 0));
      procs[tr.name] = {
        cpuAvgPct: r1(avg(cpu)),
        cpuMaxPct: r1(Math.max(0, ...cpu)),
        rssAvgMb: r1(avg(rss)),
        rssMaxMb: r1(Math.max(0, ...rss)),
        hwmMb: r1((this.hwm.get(tr.name) ?? 0) / 1024),
        rssStartMb: r1(this.rssStart.get(tr.name) ?? 0),
        ...(atMax ? { rssAtMax: { anonMb: r1(atMax.rssAnonMb), fileMb: r1(atMax.rssFileMb) } } : {}),
        anonMaxMb: r1(Math.max(0, ...w.map((s) => s.procs[tr.name]?.rssAnonMb ?? 0))),
        waitMsPerS: r1(waitMs),
        waitUsPerRun: runs > 0 ? Math.round((waitMs * 1000) / runs) : 0,
        runsPerS: Math.round(runs),
        jitMsPerS: r1(jitMs),
      };
      tracked += avg(cpu);
    }
    const sys = avg(w.map((s) => s.systemPct));
    return {
      seconds: w.length >= 2 ? Math.round(((w.at(-1) as Sample).t - (w[0] as Sample).t) / 1000) : 0,
      load1Start: w[0]?.load1 ?? loadavg()[0],
      load1End: w.at(-1)?.load1 ?? loadavg()[0],
      load1Max: Math.max(0, ...w.map((s) => s.load1)),
      systemAvgPct: r1(sys),
      otherAvgPct: r1(Math.max(0, sys - tracked)),
      procs,
    };
  }
}

const r1 = (x: number) => Math.round(x * 10) / 10;

let coreCount = 0;
export function cores(): number {
  if (!coreCount) {
    coreCount = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .filter((l) => /^cpu\d+ /.test(l)).length;
  }
  return coreCount || 1;
}
