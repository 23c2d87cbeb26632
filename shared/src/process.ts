import type { Logger } from './log.ts';

/**
 * Runs `close` once on SIGTERM or SIGINT, then exits. A second signal, or a close that takes
 * longer than `graceMs`, exits at once: nothing is lost by that, because offsets are committed
 * only after work is done and uncommitted records are redelivered.
 */
export function onShutdown(log: Logger, close: () => Promise<void>, graceMs = 30_000): void {
  let closing = false;
  const stop = (signal: string) => {
    if (closing) process.exit(1);
    closing = true;
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
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
