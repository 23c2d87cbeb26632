// PUBLISH_TIMEOUT_MS: a publish whose write Kafka has not acknowledged in time is answered 503 with
// Retry-After, and a repeat with the same id is accepted once writes go through again.
import t from 'tap';
import type { BusProducer } from '@switchyard/shared/bus/index.ts';
import { buildTestApp } from './helpers.ts';

t.test('a write not acknowledged within PUBLISH_TIMEOUT_MS is answered 503', async (t) => {
  // Writes are held (as by a partition below min.insync.replicas) until released.
  let release: () => void = () => {};
  let held: Promise<void> | null = new Promise<void>((r) => (release = r));
  const holding = (p: BusProducer): BusProducer => ({
    ...p,
    send: async (topic, records) => {
      if (held) await held;
      return p.send(topic, records);
    },
  });
  const { app, call } = await buildTestApp(t, { PUBLISH_TIMEOUT_MS: '200' }, holding);
  t.equal((await call('PUT', '/api/v1/tenants/t1')).status, 201);
  const event = { tenant_id: 't1', id: 'held-1', topic: 'a', data: { n: 1 } };
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/publish',
    headers: { authorization: 'Bearer test-admin-key' },
    payload: event,
  });
  t.equal(res.statusCode, 503, 'answered while the write is still held');
  t.ok(res.headers['retry-after'], 'with Retry-After');
  t.equal(res.json().code, 'SERVICE_UNAVAILABLE');
  held = null;
  release();
  const again = await call('POST', '/api/v1/publish', event);
  t.equal(again.status, 202, 'the repeat with the same id is accepted');
});
