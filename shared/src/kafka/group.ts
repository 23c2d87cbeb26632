// A kafkajs consumer's life in its group, for both kinds of consumer (consumer.ts, delayed.ts): the
// session it keeps, its first join, and the restarts kafkajs will not make itself.
import type { Consumer, ConsumerRunConfig } from 'kafkajs';
import type { Logger } from '../log.ts';

/**
 * Consumer group session: how long the broker waits for a heartbeat before it gives a silent
 * member's partitions to the others (every consumer heartbeats at least once a second). 10 s rather
 * than the 45 s it was: after a SIGKILL the partitions were idle that long (docs/performance.md).
 */
export const SESSION_TIMEOUT_MS = 10_000;

/** How long `consume` waits for its first partitions before it goes on anyway (and says so). */
const JOIN_WAIT_MS = 30_000;

/** Resolves at the consumer's first group join, or after JOIN_WAIT_MS with a warning. */
export function firstJoin(consumer: Consumer, log: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      log.warn({ wait_ms: JOIN_WAIT_MS }, 'no partitions assigned yet; going on');
      resolve();
    }, JOIN_WAIT_MS);
    timer.unref();
    const off = consumer.on(consumer.events.GROUP_JOIN, () => {
      clearTimeout(timer);
      off();
      resolve();
    });
  });
}

/**
 * Runs a kafkajs consumer, and runs it again whenever kafkajs gives up on it. kafkajs restarts a
 * crashed consumer only after an error it counts as retriable, and some errors that pass once the
 * broker is back are not: with the broker restarting, `KafkaJSGroupCoordinatorNotFound` ("Failed to
 * find group coordinator") stopped the attempts consumer of one run and the retry scheduler of
 * another for good, while their processes looked healthy (test/faults/kafka.test.ts). So a crash
 * kafkajs will not restart is restarted here, after 1 s, doubling to 30 s while starting fails;
 * offsets trail the work, so the restarted consumer resumes where its group committed, as after a
 * rebalance. Returns a function that stops the restarts (called before the consumer is closed).
 */
export async function runKept(consumer: Consumer, config: ConsumerRunConfig, log: Logger): Promise<() => void> {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let delay = RESTART_MIN_MS;
  const again = async () => {
    timer = null;
    if (stopped) return;
    try {
      await consumer.connect();
      await consumer.run(config);
    } catch (err) {
      // Refused before kafkajs took it over (no CRASH follows): try again later.
      log.warn({ err, retry_in_ms: delay }, 'restarting the consumer failed; will retry');
      schedule();
    }
  };
  const schedule = () => {
    if (stopped || timer) return;
    timer = setTimeout(() => void again(), delay);
    delay = Math.min(delay * 2, RESTART_MAX_MS);
  };
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (payload.restart || stopped) return;
    log.error({ err: payload.error, retry_in_ms: delay }, 'kafkajs stopped the consumer; starting it again');
    schedule();
  });
  consumer.on(consumer.events.GROUP_JOIN, () => {
    delay = RESTART_MIN_MS;
  });
  await consumer.run(config);
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
const RESTART_MIN_MS = 1_000;
const RESTART_MAX_MS = 30_000;
