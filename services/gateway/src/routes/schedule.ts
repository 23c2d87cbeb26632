// POST .../events/{event_id}/cancel: a scheduled event (publish with deliver_at or delay_seconds)
// canceled before it is due. Its deliveries still come due in the retry tiers; the sender finds the
// cancellation then and records one final `canceled` attempt each (response_data.reason
// "event_canceled") instead of a request. Listings show the deliveries canceled at once.
//
// A cancel is refused (409) once the event is due within CANCEL_GUARD_MS, on the database's clock:
// the sender reads the cancellation when the delivery is due (controls/scheduled.ts), and a cancel
// answered 200 must be stored by then, or it would be answered and still delivered.
import type { FastifyInstance } from 'fastify';
import { AppError } from '@switchyard/shared/errors.ts';
import type { Knex } from '@switchyard/shared/db/index.ts';
import type { TenantCheck } from './deps.ts';
import { answers } from '../openapi.ts';
import { existingTenant, idParam, type TenantReq } from './common.ts';

/**
 * How long before deliver_at a scheduled event stops being cancelable. The route's description
 * below, EVENT_NOT_SCHEDULED's message (shared/src/errors.ts), docs/errors.md and
 * docs/delivery-controls.md say "within a second": they change with it.
 */
export const CANCEL_GUARD_MS = 1000;

export interface ScheduleRouteDeps {
  tenants: TenantCheck;
  db: Knex;
}

export function scheduleRoutes(deps: ScheduleRouteDeps) {
  return async (app: FastifyInstance) => {
    app.post<{ Params: { tenant_id?: string; event_id?: string } }>(
      '/events/:event_id/cancel',
      {
        schema: {
          tags: ['events'],
          summary: 'Cancel a scheduled event before it is due',
          description:
            'Each delivery of the event ends as one final attempt with status canceled (response_data.reason "event_canceled") when it comes due, instead of a request. 409 EVENT_NOT_SCHEDULED once the event is due within a second (or was never scheduled). Canceling again is a no-op (200), also once it is due.',
          params: { type: 'object', properties: { tenant_id: idParam, event_id: idParam } },
          response: answers({ 200: 'Success' }, [409]),
        },
      },
      async (req) => {
        const tenantId = await existingTenant(deps.tenants, req as unknown as TenantReq);
        const eventId = req.params.event_id ?? '';
        const { db } = deps;
        const row = (await db('events')
          .where({ tenant_id: tenantId, id: eventId })
          .first(
            'received_at',
            db.raw(`coalesce(deliver_at > clock_timestamp() + ? * interval '1 millisecond', false) as open`, [CANCEL_GUARD_MS]),
            db.raw(
              'exists (select 1 from event_cancellations c where c.tenant_id = events.tenant_id and c.event_id = events.id) as canceled',
            ),
          )) as { received_at: Date; open: boolean; canceled: boolean } | undefined;
        if (!row) throw new AppError('EVENT_NOT_FOUND');
        if (row.canceled) return { success: true };
        if (!row.open) throw new AppError('EVENT_NOT_SCHEDULED');
        await db.transaction(async (tx) => {
          await tx('event_cancellations').insert({ tenant_id: tenantId, event_id: eventId }).onConflict(['tenant_id', 'event_id']).ignore();
          // Shown canceled at once; the senders' canceled attempts confirm it when the deliveries come due.
          await tx('deliveries')
            .where({ tenant_id: tenantId, event_id: eventId, created_at: row.received_at, status: 'pending' })
            .update({ status: 'canceled' });
        });
        return { success: true };
      },
    );
  };
}
