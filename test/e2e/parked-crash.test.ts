// A sender killed (kill -9) while its destination is stalled: the deliveries it had parked in the
// retry tiers come back from there, and the same deliveries are read again from the deliveries
// topic (its committed offset was held back by the slow ones in flight). Each is delivered once
// (beyond the in-flight window, which at-least-once allows): the parked copy of a delivery that has
// succeeded since is not made. Every service its own process; with SWITCHYARD_E2E_MODE=embedded
// (test/embedded/e2e-parked-crash.test.ts), one embedded process.
import t from 'tap';
import { metricSum, metricsUrl, startReceiver, startService, startStack, waitFor } from '@switchyard/shared/testing/index.ts';

const EVENTS = 30;
const CONCURRENCY = 2;

t.test('parked deliveries after a kill -9 are not delivered twice', async (t) => {
  const { env, base, api, sender } = await startStack(t, {
    TOPICS: 'user.created',
    KAFKA_PARTITIONS: '1',
    SENDER_TYPES: 'webhook',
    // A destination slower than this is stalled: its waiting deliveries are parked.
    DESTINATION_STALL_MS: '300',
    DESTINATION_CONCURRENCY: String(CONCURRENCY),
    DELIVERY_TIMEOUT_SECONDS: '20',
  });
  const rx = await startReceiver(t);
  rx.respond(() => ({ status: 200, delayMs: 3000 }));
  await api('PUT', '/api/v1/tenants/pc');
  t.equal(
    (await api('POST', '/api/v1/tenants/pc/destinations', { type: 'webhook', topics: '*', config: { url: `${rx.url}/in` } })).status,
    201,
  );

  const ids = Array.from({ length: EVENTS }, (_, i) => `pc-${i}`);
  const batch = await api<{ results: Array<{ status: number }> }>('POST', '/api/v1/publish/batch', {
    events: ids.map((id) => ({ id, tenant_id: 'pc', topic: 'user.created', data: { id } })),
  });
  t.same(
    batch.body.results.map((r) => r.status),
    ids.map(() => 202),
    'all accepted',
  );
  const metrics = await metricsUrl(sender, base);
  await waitFor('most deliveries parked', async () => {
    const parked = metricSum(await (await fetch(metrics)).text(), 'switchyard_deliveries_parked_total') ?? 0;
    return parked >= EVENTS / 2;
  });

  await sender.stop('SIGKILL');
  rx.respond(() => ({ status: 200 }));
  // In embedded mode the one process, the gateway with it.
  const restarted = await startService(t, 'sender', env);

  const received = () => ids.map((id) => rx.requests.filter((r) => (JSON.parse(r.body) as { id: string }).id === id).length);
  await waitFor('every event received', () => received().every((n) => n > 0), 120_000);
  // Quiet: nothing of any group waits any more, the parked copies included.
  const quietUrl = await metricsUrl(restarted, base);
  await waitFor(
    'every record handled',
    async () => metricSum(await (await fetch(quietUrl)).text(), 'switchyard_consumer_lag_records') === 0,
    120_000,
  );
  const twice = received().filter((n) => n > 1).length;
  // Those in flight at the kill (sent, their attempts never written): the window, with room to spare
  // (every one of the 30 was delivered twice before).
  t.ok(twice <= 2 * CONCURRENCY, `delivered again: ${twice} of ${EVENTS} (the in-flight window is ${CONCURRENCY})`);
});
