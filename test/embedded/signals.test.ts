// Stopping like a good citizen, as a user and a supervisor see it: SIGTERM to `npm start` stops the
// server (the data lock is free after); Ctrl-C's SIGINT followed at once by a launcher's SIGTERM is
// one graceful stop, not a forced exit; a signal during start-up stops cleanly; a configuration error
// lists every problem on one line without a stack trace and exits with code 2.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { freePort, ROOT, waitFor, waitForStart } from '@switchyard/shared/testing/index.ts';

interface Run {
  child: ChildProcess;
  out(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function run(t: { teardown(fn: () => unknown): void }, cmd: string, args: string[], env: Record<string, string>): Run {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(API_|KAFKA_|DATABASE_|AES_|EGRESS_|DATA_DIR|SWITCHYARD_E2E)/.test(k)),
  );
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...base, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, out: () => out, exit };
}

const dataDir = (t: { teardown(fn: () => unknown): void }) => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-signals-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

const embedded = `${ROOT}services/embedded/src/main.ts`;

t.test('SIGTERM to `npm start` stops the server; SIGINT and SIGTERM at once stop it gracefully', async (t) => {
  const dir = dataDir(t);
  const npm = run(t, 'npm', ['start', '--silent'], { DATA_DIR: dir, API_PORT: String(await freePort()) });
  await waitForStart('npm start', npm.child, npm.out, () => /embedded mode ready/.test(npm.out()));
  npm.child.kill('SIGTERM');
  await npm.exit;
  await waitFor('the server stopped', () => /"msg":"stopped"/.test(npm.out()), 30_000);
  // The lock is released by a stopped process: a new one takes the directory.
  await waitFor('the lock released', () => !existsSync(join(dir, 'switchyard.pid')) || /stopped/.test(npm.out()));
  const again = run(t, process.execPath, [embedded], { DATA_DIR: dir, API_PORT: String(await freePort()) });
  await waitForStart('a second start on the same data', again.child, again.out, () => /embedded mode ready/.test(again.out()));

  // Ctrl-C reaches the whole process group, and a launcher sends its own SIGTERM right after.
  again.child.kill('SIGINT');
  again.child.kill('SIGTERM');
  t.equal((await again.exit).code, 0, 'SIGINT then SIGTERM at once: one graceful stop');
  t.match(again.out(), /already stopping/, 'the second signal was taken as the same request');
  t.notMatch(again.out(), /exiting at once/);
});

t.test('a signal during start-up stops cleanly', async (t) => {
  const dir = dataDir(t);
  const p = run(t, process.execPath, [embedded], { DATA_DIR: dir, API_PORT: String(await freePort()) });
  // Well inside start-up: its data directory is locked, the embedded database about to be created.
  // Waited for, not slept: on a busy machine loading the code alone may take longer than any fixed
  // pause, and a signal before its handlers are installed kills the process.
  await waitForStart('start-up under way', p.child, p.out, () => existsSync(join(dir, '.lock')));
  p.child.kill('SIGTERM');
  const { code, signal } = await p.exit;
  t.same([code, signal], [0, null], 'exit code 0, not killed by the signal');
  t.notMatch(p.out(), /\n\s+at /, 'no stack trace');
});

t.test('configuration errors: every problem listed on one line, no stack trace, exit code 2', async (t) => {
  for (const script of [embedded, `${ROOT}services/router/src/main.ts`]) {
    const p = run(t, process.execPath, [script], {
      DATA_DIR: dataDir(t),
      API_PORT: 'http',
      KAFKA_PARTITIONS: '0',
      KAFKA_BROKERS: '127.0.0.1:1',
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/x',
    });
    const { code } = await p.exit;
    t.equal(code, 2, `${script.split('/').at(-3)}: exit code 2`);
    t.match(p.out(), /invalid configuration: /);
    t.equal(p.out().trim().split('\n').length, 1, 'one line');
    // API_PORT is the gateway's: embedded mode runs the gateway and checks it, the router does not.
    if (script === embedded) t.match(p.out(), /API_PORT: must be integer/);
    else t.notMatch(p.out(), /API_PORT/, "the router does not check the gateway's settings");
    t.match(p.out(), /KAFKA_PARTITIONS: must be >= 1/);
    t.notMatch(p.out(), /\n\s+at /, 'no stack trace');
  }
});
