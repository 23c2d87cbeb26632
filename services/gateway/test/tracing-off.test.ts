// Tracing off (OTEL_EXPORTER_OTLP_ENDPOINT empty, the default): a published event's record carries no
// trace header, so the pipeline pays nothing for tracing. Tracing on: test/e2e/tracing.test.ts.
import t from 'tap';
import type { BusProducer, OutRecord } from '@switchyard/shared/bus/index.ts';
import { buildTestApp } from './helpers.ts';

t.test('with tracing off, event records carry no headers', async (t) => {
  const sent: OutRecord[] = [];
  const watching = (p: BusProducer): BusProducer => ({
    ...p,
    send: (topic, records) => {
      if (topic.name === 'events') sent.push(...records);
      return p.send(topic, records);
    },
  });
  const { call, config } = await buildTestApp(t, {}, watching);
  t.equal(config.OTEL_EXPORTER_OTLP_ENDPOINT, '', 'off by default');
  t.equal((await call('PUT', '/api/v1/tenants/t1')).status, 201);
  t.equal((await call('POST', '/api/v1/publish', { tenant_id: 't1', topic: 'a', data: { n: 1 } })).status, 202);
  t.equal(sent.length, 1);
  t.notOk('headers' in (sent[0] as OutRecord), 'no headers field at all');
});
