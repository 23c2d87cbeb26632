// Scheduled events: publish (one or a batch) with `deliver_at` (RFC 3339) or `delay_seconds`. The
// event is accepted, stored and listed at once (status `scheduled`); its deliveries wait in the
// retry tiers until then (docs/delivery-controls.md, "Scheduled events").
import { instantOf } from '@switchyard/shared/time.ts';
import type { Problem } from '@switchyard/shared/errors.ts';

/** How far ahead an event may be scheduled: the retry tiers hold it, and Kafka keeps records 7 days by default. */
export const SCHEDULE_HORIZON_SECONDS = 7 * 24 * 60 * 60;

export const scheduleProperties = {
  deliver_at: {
    type: 'string',
    format: 'date-time',
    description: `Deliver the event at this time (RFC 3339), at most ${SCHEDULE_HORIZON_SECONDS / 86_400} days ahead; a time already past delivers at once. Not with delay_seconds.`,
  },
  delay_seconds: {
    type: 'integer',
    minimum: 0,
    maximum: SCHEDULE_HORIZON_SECONDS,
    description: 'Deliver the event this many seconds after it is accepted. Not with deliver_at.',
  },
} as const;

/** When the event's deliveries are due (ISO), undefined for at once; or the problems of the input. */
export function deliverAtOf(
  body: { deliver_at?: string; delay_seconds?: number },
  at: string,
  now = Date.now(),
): { deliver_at?: string; problems: Problem[] } {
  if (body.deliver_at !== undefined && body.delay_seconds !== undefined)
    return { problems: [{ path: `${at}.delay_seconds`, message: 'may not be given with deliver_at' }] };
  if (body.delay_seconds !== undefined)
    return body.delay_seconds > 0
      ? { deliver_at: new Date(now + body.delay_seconds * 1000).toISOString(), problems: [] }
      : { problems: [] };
  if (body.deliver_at === undefined) return { problems: [] };
  const due = instantOf(body.deliver_at)?.getTime();
  if (due === undefined) return { problems: [{ path: `${at}.deliver_at`, message: 'must be an RFC 3339 time' }] };
  if (due > now + SCHEDULE_HORIZON_SECONDS * 1000)
    return { problems: [{ path: `${at}.deliver_at`, message: `must be at most ${SCHEDULE_HORIZON_SECONDS / 86_400} days ahead` }] };
  return due > now ? { deliver_at: new Date(due).toISOString(), problems: [] } : { problems: [] };
}
