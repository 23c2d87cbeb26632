import t from 'tap';
import { deliverAtOf, SCHEDULE_HORIZON_SECONDS } from '../src/schedule.ts';

t.test('deliver_at and delay_seconds', async (t) => {
  const now = Date.parse('2026-01-01T00:00:00.000Z');
  t.same(deliverAtOf({}, 'body', now), { problems: [] }, 'neither: at once');
  t.same(deliverAtOf({ delay_seconds: 10 }, 'body', now), { deliver_at: '2026-01-01T00:00:10.000Z', problems: [] });
  t.same(deliverAtOf({ delay_seconds: 0 }, 'body', now), { problems: [] }, 'no delay: at once');
  t.same(deliverAtOf({ deliver_at: '2026-01-01T01:00:00+01:00' }, 'body', now), { problems: [] }, 'a time already past: at once');
  t.same(deliverAtOf({ deliver_at: '2026-01-02T01:00:00+01:00' }, 'body', now), { deliver_at: '2026-01-02T00:00:00.000Z', problems: [] });
  const horizon = new Date(now + SCHEDULE_HORIZON_SECONDS * 1000).toISOString();
  t.same(deliverAtOf({ deliver_at: horizon }, 'body', now).deliver_at, horizon, 'the horizon itself');
  t.match(deliverAtOf({ deliver_at: new Date(now + SCHEDULE_HORIZON_SECONDS * 1000 + 1).toISOString() }, 'body.events[2]', now).problems, [
    { path: 'body.events[2].deliver_at', message: 'must be at most 7 days ahead' },
  ]);
  t.match(deliverAtOf({ deliver_at: horizon, delay_seconds: 1 }, 'body', now).problems, [{ path: 'body.delay_seconds' }]);
});
