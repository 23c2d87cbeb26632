import t from 'tap';
import { checkEvent } from '../src/validate.ts';

// Records written to the events topic by a producer directly, as the router checks them.
const record = { partition: 2, offset: '41', timestamp: Date.parse('2026-01-02T03:04:05.000Z') };
const topics = ['user.created', 'order.*'];

t.test('a valid record gets what the gateway would have filled in', async (t) => {
  const r = checkEvent({ tenant_id: 'acme', topic: 'order.paid', data: { n: 1 } }, record, topics);
  t.ok(r.ok);
  if (!r.ok) return;
  t.match(r.event, {
    id: 'kafka-2-41',
    tenant_id: 'acme',
    topic: 'order.paid',
    time: '2026-01-02T03:04:05.000Z',
    received_at: '2026-01-02T03:04:05.000Z',
    eligible_for_retry: true,
    metadata: null,
    destination_id: null,
  });
});

t.test('what the producer set is kept', async (t) => {
  const r = checkEvent(
    { id: 'e1', tenant_id: 'acme', topic: 'user.created', time: '2025-12-31T23:00:00+01:00', eligible_for_retry: false, data: {} },
    record,
    topics,
  );
  t.ok(r.ok);
  if (r.ok) t.match(r.event, { id: 'e1', time: '2025-12-31T22:00:00.000Z', eligible_for_retry: false });
});

t.test('refusals say why', async (t) => {
  const refused = (value: unknown) => {
    const r = checkEvent(value, record, topics);
    return r.ok ? 'accepted' : r.reason;
  };
  t.match(refused({ tenant_id: 'acme', topic: 'nope', data: {} }), /^unknown topic: nope$/);
  t.match(refused({ tenant_id: 'acme', topic: 'order.*', data: {} }), /^unknown topic/, 'a wildcard is no topic');
  t.match(refused({ topic: 'user.created', data: {} }), /^schema: /, 'tenant_id is required');
  t.match(refused({ tenant_id: 'acme', topic: 'user.created', data: { s: 'a\u0000b' } }), /^unstorable: /);
});

t.test('a time must name an instant a Date and Postgres hold: refused, never thrown, never routed', async (t) => {
  for (const at of ['2016-12-31T23:59:60Z', '0000-01-01T00:00:00Z', '2030-02-30T00:00:00Z']) {
    for (const field of ['time', 'deliver_at']) {
      const r = checkEvent({ tenant_id: 'acme', topic: 'order.paid', data: {}, [field]: at }, record, topics);
      t.notOk(r.ok, `${field} ${at}`);
      if (!r.ok) t.match(r.reason, new RegExp(`^schema: /${field} must match format "date-time"`));
    }
  }
});

t.test('times any RFC 3339 offset writes go on in UTC', async (t) => {
  const r = checkEvent(
    { tenant_id: 'acme', topic: 'order.paid', data: {}, time: '2026-01-02T05:04:05+05', deliver_at: '2026-01-03 00:00:00+0530' },
    record,
    topics,
  );
  t.ok(r.ok);
  if (r.ok) t.match(r.event, { time: '2026-01-02T00:04:05.000Z', deliver_at: '2026-01-02T18:30:00.000Z' });
});
