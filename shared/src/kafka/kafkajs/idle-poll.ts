// A fix to kafkajs 2.2.4's internals, applied once when shared/src/kafka/index.ts loads.
//
// Every broker connection has a request queue, and kafkajs re-arms a timer to check it after every
// response: `setTimeout(check, throttledUntil - Date.now())`. With no broker throttle,
// `throttledUntil` is -1, the delay is negative, Node runs it after 1 ms, and the check re-arms
// itself. So each connection wakes the process a thousand times a second for as long as it lives,
// whether or not anything waits (Node 24 also warns: TimeoutNegativeWarning). Upstream:
// https://github.com/tulios/kafkajs/issues/1751, fixes proposed in #1755 and #1768, unreleased.
//
// A check only sends requests that are pending, and every new request either goes out at once or
// is queued with a check of its own, so with nothing pending there is nothing to check for.
// Remove this module when kafkajs ships the fix.
import { createRequire } from 'node:module';
import { assertPatchedKafkajs } from './version.ts';

assertPatchedKafkajs('idle-poll.ts');

/** The parts of kafkajs's RequestQueue (src/network/requestQueue) this fix relies on. */
export interface RequestQueueInternals {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: ReturnType<typeof setTimeout> | null;
  maxInFlightRequests: number | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
  destroy(): void;
}

export type RequestQueueClass = new (options: {
  maxInFlightRequests: number | null;
  requestTimeout: number;
  enforceRequestTimeout: boolean;
  clientId: string;
  broker: string;
  logger: unknown;
}) => RequestQueueInternals;

const require = createRequire(import.meta.url);
export const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as RequestQueueClass;

// Marked on kafkajs's prototype, not here: two copies of this module (sources and a built tree in
// one process) still patch the one kafkajs once.
const FIXED = Symbol.for('switchyard.kafkajs.idlePollFixed');
const proto = RequestQueue.prototype as RequestQueueInternals & { [FIXED]?: true };
if (!proto[FIXED]) {
  const schedule = proto.scheduleCheckPendingRequests;
  if (typeof schedule !== 'function' || typeof proto.checkPendingRequests !== 'function') {
    // Fail loudly: a kafkajs upgrade moved what this fix patches (review this module).
    throw new Error('kafkajs RequestQueue internals changed: review shared/src/kafka/kafkajs/idle-poll.ts');
  }
  proto.scheduleCheckPendingRequests = function (this: RequestQueueInternals) {
    if (this.pending.length === 0) return;
    schedule.call(this);
  };
  proto[FIXED] = true;
}
