import { ConfigError } from './config/index.ts';
import type { Logger } from './log.ts';

/**
 * A second signal this soon after the first is the same request arriving twice, not impatience:
 * Ctrl-C sends SIGINT to the whole process group, and a launcher (npm run start:stack, a supervisor)
 * then sends its own SIGTERM. Ignored; a third signal, or a second one later than this, exits at once.
 */
export const REPEAT_SIGNAL_MS = 3_000;

/**
 * A dependency failed at start (unreachable, refused the credentials, ...): printed as one line
 * naming it and its setting, not a stack (startFailed).
 */
export class DependencyError extends Error {
  readonly dependency: string;
  constructor(dependency: string, cause: unknown) {
    super(`${dependency}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.dependency = dependency;
  }
}

/**
 * A listener's failure to bind `host:port` (the settings `setting` names them) as a DependencyError:
 * the address is taken, may not be bound here, or the host is not this host's. One line at start
 * (startFailed), naming the setting to change, not Node's stack.
 */
export function listenError(setting: { host: string; port: string }, host: string, port: number, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException)?.code;
  const [name, why] =
    code === 'EADDRINUSE'
      ? [setting.port, 'already in use by another process; set another port (0 picks a free one)']
      : code === 'EACCES'
        ? [setting.port, 'may not be bound by this user (ports below 1024 need privileges)']
        : code === 'EADDRNOTAVAIL'
          ? [setting.host, 'is not an address of this host']
          : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
            ? [setting.host, 'is not a name this host resolves']
            : [];
  if (!why) return err;
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new DependencyError(`${name} (${address})`, new Error(why));
}

const state = {
  installed: false,
  count: 0,
  firstAt: 0,
  /** The first signal, while start-up is still under way (no stop registered yet). */
  pending: null as string | null,
  /** Ends the process if start-up does not finish after that signal; cleared when the stop begins. */
  startupTimer: undefined as NodeJS.Timeout | undefined,
  startupGraceMs: 30_000,
  stop: null as ((signal: string) => void) | null,
  log: null as Logger | null,
};

function say(level: 'info' | 'warn' | 'error', fields: Record<string, unknown>, msg: string): void {
  if (state.log) state.log[level](fields, msg);
  else process.stderr.write(`${JSON.stringify({ level, ...fields, msg })}\n`);
}

function received(signal: string): void {
  state.count++;
  const now = Date.now();
  if (state.count === 1) {
    state.firstAt = now;
    if (state.stop) state.stop(signal);
    else {
      // Start-up is under way: the stop runs as soon as it is done (onShutdown), or the process
      // leaves if start-up takes longer than a grace period (it has done no work to finish yet).
      state.pending = signal;
      say('info', { signal }, 'signal during start-up; stopping once started');
      // Cleared once start-up is done and the stop begins (onShutdown): the stop has its own grace.
      state.startupTimer = setTimeout(() => {
        say('warn', { signal }, 'start-up did not finish after the signal; exiting');
        process.exit(0);
      }, state.startupGraceMs);
      state.startupTimer.unref();
    }
    return;
  }
  if (state.count === 2 && now - state.firstAt < REPEAT_SIGNAL_MS) {
    say('info', { signal }, 'already stopping; a third signal exits at once');
    return;
  }
  say('warn', { signal }, 'signal while stopping; exiting at once');
  process.exit(1);
}

/**
 * Takes over SIGTERM and SIGINT from the start of the process, so a signal during start-up stops it
 * cleanly rather than killing it half-started (or ends it when start-up takes `startupGraceMs` more).
 * Called by onShutdown; call it first thing in a main.
 */
export function catchSignals(startupGraceMs = 30_000): void {
  if (state.installed) return;
  state.installed = true;
  state.startupGraceMs = startupGraceMs;
  process.on('SIGTERM', () => received('SIGTERM'));
  process.on('SIGINT', () => received('SIGINT'));
}

/**
 * Ends a process whose start failed: a configuration error is printed as the list of its problems,
 * on one line without a stack, with exit code 2; a dependency that failed at start (DependencyError)
 * on one line naming it, exit code 1; anything else is logged with its stack, exit code 1.
 */
export function startFailed(service: string, log?: Logger): (err: unknown) => never {
  return (err) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`switchyard ${service}: ${err.message}\n`);
      process.exit(2);
    }
    // Asked to stop while starting (Ctrl-C reaches a child of start-up too, which then fails): done.
    if (err instanceof DependencyError && state.pending) {
      process.stderr.write(`switchyard ${service}: stopped during start-up (${state.pending})\n`);
      process.exit(0);
    }
    // A dependency that failed at start: one line naming it (its own message may span lines).
    if (err instanceof DependencyError) {
      process.stderr.write(`switchyard ${service}: failed to start: ${err.message.replace(/\s*\n\s*/g, ' ')}\n`);
      process.exit(1);
    }
    if (log) log.fatal({ err }, 'failed to start');
    else process.stderr.write(`switchyard ${service}: failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  };
}

/** The shutdown grace of a service whose in-flight work each ends within seconds. */
export const SHUTDOWN_GRACE_MS = 30_000;

/**
 * The shutdown grace of a service whose in-flight work may each take up to `longestMs` (the sender's
 * DELIVERY_TIMEOUT_SECONDS, the gateway's PUBLISH_TIMEOUT_MS): that plus 10 s to write and commit
 * what finished, and never less than SHUTDOWN_GRACE_MS. A pod's terminationGracePeriodSeconds must
 * exceed it (infra/k8s; test/deploy/k8s.test.ts checks them).
 */
export function shutdownGraceMs(longestMs: number): number {
  return Math.max(SHUTDOWN_GRACE_MS, longestMs + 10_000);
}

/**
 * Runs `close` once on SIGTERM or SIGINT (or at once, when one came during start-up), then exits.
 * A second signal right after the first is ignored (REPEAT_SIGNAL_MS); a third, a later second one,
 * or a close that takes longer than `graceMs`, exits at once: nothing is lost by that, because
 * offsets are committed only after work is done and uncommitted records are redelivered.
 */
export function onShutdown(log: Logger, close: () => Promise<void>, graceMs = SHUTDOWN_GRACE_MS): void {
  catchSignals();
  state.log = log;
  state.stop = (signal: string) => {
    log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      log.error({ grace_ms: graceMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    close().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  if (state.pending) {
    clearTimeout(state.startupTimer);
    state.stop(state.pending);
  }
}

/** Whether the process `pid` runs (EPERM: it does, as another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
