import { newId } from '@switchyard/shared/ids.ts';
import type { AttemptRecord, DeliveryRecord, DestinationType } from '@switchyard/shared/model/index.ts';
import type { Outcome, Sender } from './sender.ts';

export interface HandlerDeps {
  senders: Partial<Record<DestinationType, Sender>>;
  open(snapshot: DeliveryRecord['destination']): { credentials: Record<string, unknown>; delivery_metadata: Record<string, string> };
  emitAttempt(attempt: AttemptRecord): Promise<void>;
  timeoutMs: number;
  now?: () => Date;
}

/** Delivers one record and emits its attempt. Throws only for our own faults (the record is redelivered). */
export function createDeliveryHandler(deps: HandlerDeps) {
  const now = deps.now ?? (() => new Date());
  return async function handle(delivery: DeliveryRecord): Promise<{ attempt: AttemptRecord; outcome: Outcome }> {
    const sender = deps.senders[delivery.destination.type];
    if (!sender) throw new Error(`no sender for type ${delivery.destination.type} in this process`);
    const started = performance.now();
    const { credentials, delivery_metadata } = deps.open(delivery.destination);
    const signal = AbortSignal.timeout(deps.timeoutMs);
    let outcome: Outcome;
    try {
      outcome = await sender.deliver({
        event: delivery.event,
        destination: delivery.destination,
        credentials,
        deliveryMetadata: delivery_metadata,
        signal,
      });
    } catch (err) {
      // A sender should return failures as outcomes; anything thrown is still the destination's attempt.
      outcome = {
        status: 'failed',
        code: 'ERR',
        response_data: { reason: 'sender_error', message: (err as Error).message },
        retryable: true,
      };
    }
    const attempt: AttemptRecord = {
      id: newId(),
      tenant_id: delivery.event.tenant_id,
      destination_id: delivery.destination.id,
      destination_type: delivery.destination.type,
      event_id: delivery.event.id,
      topic: delivery.event.topic,
      status: outcome.status,
      code: outcome.code,
      response_data: outcome.response_data,
      attempt_number: delivery.attempt_number,
      manual: delivery.manual,
      time: now().toISOString(),
      duration_ms: Math.round(performance.now() - started),
    };
    await deps.emitAttempt(attempt);
    return { attempt, outcome };
  };
}
