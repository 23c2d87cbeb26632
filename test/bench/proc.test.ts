// The benchmark's process sampler reads how long a process's threads waited for a CPU: with more
// spinning processes than cores, the spinners together must wait about one core's worth of time.
// And it counts the CPU of a JVM's JIT compiler threads apart, by their names. (Linux only, as the
// benchmark is.) And it splits a process's memory into its own (anonymous) and mapped files.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import type { Teardown } from '@switchyard/shared/testing/index.ts';
import { cores, isJitThread, type ProcSummary, ProcSampler } from '../../bench/lib/proc.ts';

/**
 * `node -e code` that writes one byte once node has started and before the code runs: starting
 * node is work of its own, seconds of it on a busy machine, which a sample must not include.
 */
const node = (code: string) =>
  spawn(process.execPath, ['-e', `process.stdout.write('.'); ${code}`], { stdio: ['ignore', 'pipe', 'ignore'] });

/**
 * Samples each named process for 2 s, once it has started (its first byte out, for those of `node`)
 * and half a second more; kills them at the test's end.
 */
async function sampleEach(t: Teardown, procs: Record<string, ChildProcess>): Promise<Record<string, ProcSummary | undefined>> {
  t.teardown(() => {
    for (const c of Object.values(procs)) c.kill('SIGKILL');
  });
  await Promise.all(Object.values(procs).map((c) => c.stdout && new Promise((r) => c.stdout?.once('data', r))));
  await sleep(500);
  const sampler = new ProcSampler(Object.entries(procs).map(([name, c]) => ({ name, pids: () => [c.pid as number] })));
  const from = Date.now();
  sampler.start(250);
  await sleep(2000);
  sampler.stop();
  return sampler.summary(from, Date.now()).procs;
}

/** Whether the process gets a thread of that name (as the kernel keeps it) within 15 s. */
async function threadNamed(pid: number, name: string): Promise<boolean> {
  for (const end = Date.now() + 15_000; Date.now() < end; await sleep(100)) {
    try {
      if (readdirSync(`/proc/${pid}/task`).some((tid) => readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() === name))
        return true;
    } catch {
      // a thread ended between the listing and the read: look again
    }
  }
  return false;
}

t.test('more busy processes than cores: their run-queue wait is counted', async (t) => {
  const n = cores() + 1;
  const spin = () => node('const end = Date.now() + 20000; while (Date.now() < end);');
  const procs = Object.values(await sampleEach(t, Object.fromEntries(Array.from({ length: n }, (_, i) => [`spin${i}`, spin()]))));
  const waits = procs.map((s) => s?.waitMsPerS ?? 0);
  const total = waits.reduce((a, b) => a + b, 0);
  // n spinners on n - 1 cores: one of them is always waiting, 1,000 ms per second in all; more when
  // other work shares the machine. The bound above is loose: each process's other threads (V8's,
  // libuv's) wait too when they wake on a full machine.
  t.ok(total > 400 && total <= n * 1000 * 2, `together they waited ${Math.round(total)} ms per second`);
  for (const s of procs) t.ok((s?.waitUsPerRun ?? 0) > 0, 'each wake-up waited on average');
  // Each spinner is put back on a CPU at every scheduler tick it loses, so at least a few times a second.
  for (const s of procs) t.ok((s?.runsPerS ?? 0) > 2, `put on a CPU ${s?.runsPerS} times a second`);
});

t.test('a sleeping process hardly waits or wakes; a 10 ms timer wakes about 100 times a second', async (t) => {
  const ticker = node('setInterval(() => {}, 10); setTimeout(() => process.exit(0), 20000)');
  const sleeper = node('setTimeout(() => {}, 20000)');
  const { ticker: tick, sleeper: s } = await sampleEach(t, { ticker, sleeper });
  t.ok(s !== undefined && (s.waitMsPerS ?? -1) >= 0 && (s.waitMsPerS ?? 1e9) < 100, `the sleeper waited ${s?.waitMsPerS} ms per second`);
  t.ok((s?.runsPerS ?? 1e9) < 20, `the sleeper woke ${s?.runsPerS} times a second`);
  const ticks = tick?.runsPerS ?? 0;
  // About 100 on a quiet machine; a busy one runs it late, so fewer: still far more than the sleeper.
  t.ok(ticks >= 25 && ticks <= 400, `the ticker woke ${ticks} times a second`);
});

t.test('threads that end between samples do not take their wait out of the others', async (t) => {
  // Short-lived spinning worker threads in one process, on a machine kept busy: each one that ends
  // had waited, and a per-process sum of its threads would fall by that much.
  const n = cores() + 1;
  const spin = 'const end = Date.now() + 20000; while (Date.now() < end);';
  const others = Array.from({ length: n }, () => spawn(process.execPath, ['-e', spin], { stdio: 'ignore' }));
  const churn = spawn(
    process.execPath,
    [
      '-e',
      `const { Worker } = require('node:worker_threads');
       const one = () => new Worker('const e = Date.now() + 150; while (Date.now() < e);', { eval: true }).on('exit', one);
       one(); one();
       setTimeout(() => process.exit(0), 20000);`,
    ],
    { stdio: 'ignore' },
  );
  t.teardown(() => {
    for (const c of [...others, churn]) c.kill('SIGKILL');
  });
  await sleep(300);
  const sampler = new ProcSampler([{ name: 'churn', pids: () => [churn.pid as number] }]);
  sampler.start(100);
  await sleep(2500);
  sampler.stop();
  const waits = sampler.samples.map((s) => s.procs.churn?.waitMsPerS ?? 0);
  t.ok(Math.max(...waits) > 0, 'its threads waited');
  t.ok(Math.min(...waits) >= 0, `no sample read a negative wait (lowest ${Math.min(...waits).toFixed(1)} ms/s)`);
});

t.test("a JVM's JIT compiler threads are told apart by name: their CPU is counted on its own", async (t) => {
  t.ok(isJitThread('C2 CompilerThre') && isJitThread('C1 CompilerThre'), "HotSpot's compiler threads, as the kernel keeps their names");
  t.notOk(isJitThread('data-plane-kafk') || isJitThread('node') || isJitThread('GC Thread#0'), 'other threads are not');
  // A worker thread that takes a compiler thread's name and spins, next to one that spins under its own.
  const spinAs = (name: string) =>
    spawn(
      process.execPath,
      [
        '-e',
        `const { Worker } = require('node:worker_threads');
         new Worker(\`require('node:fs').writeFileSync('/proc/thread-self/comm', ${JSON.stringify(name)});
           const end = Date.now() + 20000; while (Date.now() < end);\`, { eval: true });
         setTimeout(() => process.exit(0), 20000);`,
      ],
      { stdio: 'ignore' },
    );
  const jit = spinAs('C2 CompilerThread0');
  const plain = spinAs('spinner');
  // On a busy machine starting node and its worker can take longer than sampleEach's half second:
  // sample once both spinning threads exist.
  for (const [c, name] of [
    [jit, 'C2 CompilerThre'],
    [plain, 'spinner'],
  ] as const) {
    t.ok(await threadNamed(c.pid as number, name), `the ${name} thread started`);
  }
  const { jit: j, plain: p } = await sampleEach(t, { jit, plain });
  // The spinning thread is most of the process's CPU, whatever share of a core the machine leaves it.
  // (However little CPU a full machine leaves it: a spinner is counted, and is most of its process.)
  t.ok((j?.jitMsPerS ?? 0) > 10, `the renamed thread: ${j?.jitMsPerS} ms/s of JIT compilation`);
  t.ok((j?.jitMsPerS ?? 0) >= (j?.cpuAvgPct ?? 0) * 10 * 0.8 - 50, `most of the process's ${j?.cpuAvgPct}% of a core`);
  t.equal(p?.jitMsPerS, 0, 'a thread of another name: none');
});

t.test("a process's own allocations count as anonymous memory; the node binary's pages as file-backed", async (t) => {
  // 128 MiB written, so resident; a bare node process for comparison.
  const big = node('const b = Buffer.alloc(128 * 1048576, 1); setTimeout(() => b.length, 20000)');
  const bare = node('setTimeout(() => {}, 20000)');
  const { big: b, bare: n } = await sampleEach(t, { big, bare });
  const split = (s: ProcSummary | undefined) => s?.rssAtMax ?? { anonMb: 0, fileMb: 0 };
  t.ok(split(b).anonMb - split(n).anonMb >= 120, `128 MiB allocated: ${split(b).anonMb} against ${split(n).anonMb} MB anonymous`);
  t.ok(
    Math.abs(split(b).fileMb - split(n).fileMb) < 16,
    `the same binary's pages either way: ${split(b).fileMb} and ${split(n).fileMb} MB`,
  );
  t.ok(split(n).fileMb >= 10, `node's own code is resident from a file: ${split(n).fileMb} MB`);
  // The memory target's figure: the highest anonymous memory of any sample, at least the one at the RSS peak.
  t.ok((b?.anonMaxMb ?? 0) >= 128 && (b?.anonMaxMb ?? 0) >= split(b).anonMb, `peak anonymous memory ${b?.anonMaxMb} MB`);
  for (const s of [b, n]) {
    const parts = split(s).anonMb + split(s).fileMb;
    t.ok(s !== undefined && parts <= s.rssMaxMb + 0.2 && parts >= s.rssMaxMb - 2, `the parts make up the RSS: ${parts} of ${s?.rssMaxMb}`);
  }
});
