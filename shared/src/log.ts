import { pino, type DestinationStream, type Logger } from 'pino';
import { SETTINGS } from './config/catalogue.ts';
import type { Setting } from './config/setting.ts';

export type { Logger };

const CENSOR = '[redacted]';

/** Keys whose values are secrets at the top of a log line and one level inside it. */
const SECRET_KEYS = ['credentials', 'delivery_metadata', 'secret', 'token'] as const;

/**
 * Fixed paths that pino replaces. The one-level-down half of SECRET_KEYS is not here: as pino paths
 * (`*.secret`) they would run pino's redactor on every field of every line (about 6 µs a line,
 * the most of a line's cost), so `redactNested` does it once per line instead.
 */
const REDACT_PATHS = [
  // The settings the catalogue marks secret, should a line ever carry the configuration.
  ...Object.entries(SETTINGS as Record<string, Setting>)
    .filter(([, s]) => s.secret)
    .map(([name]) => `config.${name}`),
  'req.headers.authorization',
  'headers.authorization',
  ...SECRET_KEYS,
];

/**
 * Replaces SECRET_KEYS inside the line's object-valued fields, copying what it changes (the caller's
 * objects stay as they were) with their prototype and properties, so an Error keeps its message.
 */
function redactNested<T extends Record<string, unknown>>(line: T): T {
  let out = line;
  for (const key in line) {
    const v = line[key];
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(line, key)) continue;
    if (!SECRET_KEYS.some((k) => k in v)) continue;
    const copy = Object.create(Object.getPrototypeOf(v), Object.getOwnPropertyDescriptors(v)) as object;
    for (const k of SECRET_KEYS) {
      if (k in copy) Object.defineProperty(copy, k, { value: CENSOR, enumerable: true, writable: true, configurable: true });
    }
    if (out === line) out = { ...line };
    (out as Record<string, unknown>)[key] = copy;
  }
  return out;
}

/**
 * A JSON logger for one service, to stdout unless a destination is given. One wide line per publish
 * and per attempt is the convention; lines per event are at debug (a failed attempt's at info), and
 * info has a summary a minute instead (log-summary.ts, docs/operations.md "Logs").
 */
export function createLogger(service: string, level: string = 'info', destination?: DestinationStream): Logger {
  const logger = pino(
    {
      level,
      base: { service },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      formatters: { level: (label) => ({ level: label }), log: redactNested },
    },
    // Written on the calling thread: pino's default hands each write to libuv's thread pool, which
    // woke a pool thread and then the event loop again for every line, and on a busy machine those
    // wake-ups wait for a CPU (docs/performance.md, "Log lines written on the calling thread"). A line is also on its way out once logged,
    // even if the process is killed straight after.
    destination ?? pino.destination({ fd: 1, sync: true }),
  );
  // pino gives a child's bindings no formatter of the parent's, so they are redacted on the way in;
  // children inherit this method, so grandchildren are too.
  const child = logger.child;
  logger.child = function (this: Logger, bindings, options) {
    return child.call(this, redactNested(bindings), options);
  } as typeof child;
  return logger;
}

/** What failureRun writes with: a service's logger, or anything with these three levels. */
export interface RunLog {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  debug(fields: object, msg: string): void;
}

/**
 * How a periodic task (a sweep, a maintenance pass) reports a run of failures, such as the database
 * being away: the first failure is a warning, the repeats debug lines with their count, and the
 * first run that works again one info line saying how many failed. A failure every minute does not
 * fill the log, and its end is seen.
 */
export function failureRun(log: RunLog | undefined, what: string) {
  let failures = 0;
  return {
    failed(err: unknown): void {
      const fields = { err: (err as Error)?.message ?? String(err), failures: ++failures };
      const line = `${what} failed; retrying on the next run`;
      if (failures === 1) log?.warn(fields, line);
      else log?.debug(fields, line);
    },
    worked(): void {
      if (failures > 0) log?.info({ failures }, `${what} works again`);
      failures = 0;
    },
  };
}
