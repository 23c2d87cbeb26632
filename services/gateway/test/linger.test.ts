// PUBLISH_LINGER_MS: publishes made while no produce request is in flight wait to share one, while that pays.
import t, { type Test } from 'tap';
import type { BusProducer } from '@switchyard/shared/bus/index.ts';
import { testConfig } from '@switchyard/shared/testing/index.ts';
import { gatewayConfig } from '../src/service.ts';
import { buildTestApp } from './helpers.ts';

async function publishTwo(t: Test, linger: string): Promise<number[]> {
  const sends: number[] = [];
  const counting = (p: BusProducer): BusProducer => ({
    ...p,
    send: (topic, records) => {
      sends.push(records.length);
      return p.send(topic, records);
    },
  });
  const { call } = await buildTestApp(t, { PUBLISH_LINGER_MS: linger }, counting);
  t.equal((await call('PUT', '/api/v1/tenants/t1')).status, 201);
  const first = call('POST', '/api/v1/publish', { tenant_id: 't1', topic: 'a', data: { n: 1 } });
  await new Promise((r) => setTimeout(r, 5));
  const second = call('POST', '/api/v1/publish', { tenant_id: 't1', topic: 'a', data: { n: 2 } });
  const answers = await Promise.all([first, second]);
  t.same(
    answers.map((a) => a.status),
    [202, 202],
  );
  return sends;
}

t.test('without a linger each lone publish is its own produce request', async (t) => {
  t.same(await publishTwo(t, '0'), [1, 1]);
});

t.test('with a linger, publishes made within it share one produce request', async (t) => {
  t.same(await publishTwo(t, '100'), [2]);
});

t.test('a client publishing one event at a time stops waiting out the linger', async (t) => {
  const { call } = await buildTestApp(t, { PUBLISH_LINGER_MS: '100' });
  t.equal((await call('PUT', '/api/v1/tenants/t1')).status, 201);
  const held: boolean[] = [];
  for (let n = 0; n < 10; n++) {
    const at = performance.now();
    t.equal((await call('POST', '/api/v1/publish', { tenant_id: 't1', topic: 'a', data: { n } })).status, 202);
    held.push(performance.now() - at >= 100);
  }
  t.same(held.slice(0, 4), [true, true, true, true], 'the first publishes wait for company');
  // Without the gate all ten would wait; a trial or two may, as may a publish slowed by the host.
  t.ok(held.filter(Boolean).length <= 6, `then they go at once: ${held}`);
});

t.test('the embedded log takes no linger; Kafka keeps the setting', async (t) => {
  const config = testConfig({ PUBLISH_LINGER_MS: '7' });
  t.equal(gatewayConfig(config, 'kafka').PUBLISH_LINGER_MS, 7);
  t.equal(gatewayConfig(config, 'embedded').PUBLISH_LINGER_MS, 0);
  t.equal(config.PUBLISH_LINGER_MS, 7, 'the runtime settings are left as they were');
});
