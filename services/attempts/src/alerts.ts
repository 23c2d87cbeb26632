import { createHmac } from 'node:crypto';
import type { HealthChange } from './health-store.ts';
import { newId } from '@switchyard/shared/ids.ts';
import type { Logger } from '@switchyard/shared/log.ts';
import type { OperatorEvent } from '@switchyard/shared/model/index.ts';

export interface AlertDeps {
  threshold: number;
  autoDisable: boolean;
  /** Disables the destination; false when it was already disabled or is gone. */
  disable(tenantId: string, destinationId: string): Promise<boolean>;
  /** Durable channel: the operator-events topic. */
  emit(events: OperatorEvent[]): Promise<void>;
  callback?: { url: string; secret: string } | undefined;
  log: Logger;
}

/** Standard Webhooks style signature of an operator callback. */
export function signCallback(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** Turns threshold crossings into operator events, auto-disabling destinations when configured. */
export function createAlerts(deps: AlertDeps) {
  async function notify(events: OperatorEvent[]) {
    await deps.emit(events);
    const cb = deps.callback;
    if (!cb) return;
    // The topic is the durable record; the callback is a convenience and never blocks the pipeline.
    for (const e of events) {
      const body = JSON.stringify(e);
      const ts = Math.floor(Date.now() / 1000);
      fetch(cb.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': e.id,
          'webhook-timestamp': String(ts),
          'webhook-signature': signCallback(cb.secret, e.id, ts, body),
        },
        body,
        signal: AbortSignal.timeout(5000),
      }).then(
        (res) => deps.log.info({ operator_event: e.type, status: res.status }, 'operator callback'),
        (err: unknown) => deps.log.warn({ operator_event: e.type, err: (err as Error).message }, 'operator callback failed'),
      );
    }
  }

  return async function onHealth(changes: HealthChange[]): Promise<OperatorEvent[]> {
    const events: OperatorEvent[] = [];
    for (const c of changes) {
      let disabled = false;
      // One alert per run that reached the threshold, describing that run: its failures in a row and
      // its latest failed attempt, whatever came after it in the batch.
      for (const run of c.runs) {
        const base = { time: new Date().toISOString(), tenant_id: c.tenant_id, destination_id: c.destination_id };
        const data = { consecutive_failures: run.consecutive_failures, threshold: deps.threshold, last_attempt: run.last };
        events.push({ id: newId(), type: 'alert.consecutive_failure', ...base, data });
        if (deps.autoDisable && !disabled && (await deps.disable(c.tenant_id, c.destination_id))) {
          disabled = true;
          events.push({ id: newId(), type: 'destination.auto_disabled', ...base, data });
        }
      }
    }
    if (events.length) {
      await notify(events);
      for (const e of events)
        deps.log.warn(
          {
            operator_event: e.type,
            tenant_id: e.tenant_id,
            destination_id: e.destination_id,
            consecutive_failures: e.data.consecutive_failures,
          },
          'alert',
        );
    }
    return events;
  };
}
