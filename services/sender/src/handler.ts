import { newId } from '@switchyard/shared/ids.ts';
import type { AttemptRecord, DeliveryRecord, DestinationType } from '@switchyard/shared/model/index.ts';
import { type RetryPolicy, retryDelayMs } from './backoff.ts';
import type { CurrentState } from './destination-state.ts';
import { attemptNumber } from './delivery-progress.ts';
import { type Outcome, OwnFault, type Sender } from './sender.ts';

export interface HandlerDeps {
  senders: Partial<Record<DestinationType, Sender>>;
  open(snapshot: DeliveryRecord['destination']): {
    credentials: Readonly<Record<string, unknown>>;
    delivery_metadata: Readonly<Record<string, string>>;
  };
  /**
   * The destination as it is now (destination-state.ts): a deleted or disabled one gets no delivery
   * but a `canceled` attempt. Without it, the delivery's own snapshot is used.
   */
  current?(snapshot: DeliveryRecord['destination'], delivery: DeliveryRecord): CurrentState | Promise<CurrentState>;
  emitAttempt(attempt: AttemptRecord): Promise<void>;
  /**
   * Hands a failed delivery to the retry tiers, due at `dueAt`; `trace` (the attempt's trace
   * headers, tracing on only) goes with it, so the retry stays in the event's trace.
   */
  scheduleRetry(delivery: DeliveryRecord, dueAt: Date, trace?: Record<string, string>): Promise<void>;
  retry: RetryPolicy;
  timeoutMs: number;
  now?: () => Date;
}

export interface Handled {
  attempt: AttemptRecord;
  outcome: Outcome;
  /**
   * Schedules the retry when one is due, then emits the attempt. Apart from the delivery, so the
   * destination's slot is free while Kafka acknowledges (AfterKey). Throws only for our own faults
   * (Kafka unavailable); run again, it does only what did not pass: a retry parked once stays
   * parked once, and the attempt keeps its id.
   */
  write(): Promise<void>;
  /**
   * Handled in place (an ordered destination's delivery): the retry that is due, which `write` did not
   * schedule; the caller makes it itself at `dueAt`, holding the destination's slot. Null: final.
   */
  next?: { delivery: DeliveryRecord; dueAt: Date } | null;
}

/**
 * Delivers one record and makes its attempt. Throws only for our own faults (a bug), so the record
 * is handled again; a destination's failure is an attempt with status failed. `inPlace`: a retry
 * due is answered as `next` instead of going to the retry tiers (controls/ordered.ts). `after`: the
 * delivery's last attempt number stored (delivery-progress.ts); the attempt is numbered after it,
 * while its retries count on from the record's own number (a manual retry uses none of them).
 */
export function createDeliveryHandler(deps: HandlerDeps) {
  const now = deps.now ?? (() => new Date());
  return async function handle(delivery: DeliveryRecord, trace?: Record<string, string>, inPlace = false, after = 0): Promise<Handled> {
    const sender = deps.senders[delivery.destination.type];
    if (!sender) throw new Error(`no sender for type ${delivery.destination.type} in this process`);
    const number = attemptNumber(delivery, after);
    const state = deps.current ? await deps.current(delivery.destination, delivery) : { destination: delivery.destination };
    let outcome: Outcome;
    if ('canceled' in state) {
      // Final: nothing was sent, and nothing will be unless someone retries it once it is back.
      outcome = { status: 'failed', code: 'CANCELED', response_data: { reason: state.canceled }, retryable: false };
      const attempt = attemptOf(delivery, number, outcome, now(), performance.now(), null);
      attempt.status = 'canceled';
      return { attempt, outcome, write: () => deps.emitAttempt(attempt) };
    }
    const destination = state.destination;
    const { credentials, delivery_metadata } = deps.open(destination);
    // The attempt's duration is the destination's answer time: the reads before it are not in it.
    const started = performance.now();
    // Not AbortSignal.timeout: its timer cannot be cleared and lives until the signal is collected.
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
      deps.timeoutMs,
    );
    try {
      outcome = await sender.deliver({
        event: delivery.event,
        destination,
        credentials,
        deliveryMetadata: delivery_metadata,
        signal: deadline.signal,
      });
    } catch (err) {
      // Our own fault: the record is handled again, with no attempt counted.
      if (err instanceof OwnFault) throw err;
      // A sender should return failures as outcomes; anything else thrown is still the destination's attempt.
      outcome = {
        status: 'failed',
        code: 'ERR',
        response_data: { reason: 'sender_error', message: (err as Error).message },
        retryable: true,
      };
    } finally {
      clearTimeout(timer);
    }
    const at = now();
    // Manual retries are one attempt each; automatic retries follow only eligible, retryable failures.
    const delay =
      outcome.status === 'failed' && outcome.retryable && delivery.event.eligible_for_retry && !delivery.manual
        ? retryDelayMs(delivery.attempt_number, deps.retry, outcome.retryAfterMs)
        : null;
    const dueAt = delay === null ? null : new Date(at.getTime() + delay);
    const attempt = attemptOf(delivery, number, outcome, at, started, dueAt);
    const retried = { ...delivery, attempt_number: delivery.attempt_number + 1, manual: false };
    if (inPlace) return { attempt, outcome, write: () => deps.emitAttempt(attempt), next: dueAt ? { delivery: retried, dueAt } : null };
    let parked = false;
    const write = async () => {
      if (dueAt && !parked) {
        await deps.scheduleRetry(retried, dueAt, trace);
        parked = true;
      }
      await deps.emitAttempt(attempt);
    };
    return { attempt, outcome, write };
  };
}

function attemptOf(
  delivery: DeliveryRecord,
  number: number,
  outcome: Outcome,
  at: Date,
  started: number,
  dueAt: Date | null,
): AttemptRecord {
  return {
    id: newId(at.getTime()),
    tenant_id: delivery.event.tenant_id,
    destination_id: delivery.destination.id,
    destination_type: delivery.destination.type,
    event_id: delivery.event.id,
    topic: delivery.event.topic,
    event_time: delivery.event.time,
    event_received_at: delivery.event.received_at ?? delivery.event.time,
    status: outcome.status,
    code: outcome.code,
    response_data: outcome.response_data,
    attempt_number: number,
    manual: delivery.manual,
    time: at.toISOString(),
    duration_ms: Math.round(performance.now() - started),
    final: dueAt === null,
    next_attempt_at: dueAt?.toISOString() ?? null,
  };
}
