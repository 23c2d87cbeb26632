// The sender's delivery series for scheduled events, every service its own process on the real
// broker and Postgres: a scheduled event's publish -> answer latency runs from when it was due, not
// from its publish, and one canceled before it was due ends in a canceled attempt that
// switchyard_deliveries_total counts with status "canceled" and that observes no time (nothing sent).
import t from 'tap';
import { metricSum as sum, metricsUrl, startReceiver, startStack, waitFor } from '@switchyard/shared/testing/index.ts';

const DELAY_SECONDS = 10;

t.test('scheduled deliveries: latency from when due; a canceled one counted, not timed', async (t) => {
  const rx = await startReceiver(t);
  const { base, api, sender } = await startStack(t, {
    KAFKA_PARTITIONS: '1',
    SENDER_TYPES: 'webhook',
    ROUTER_BATCH_WAIT_MS: '1',
  });
  const url = await metricsUrl(sender, base);
  const scrape = async () => (await fetch(url)).text();

  t.equal((await api('PUT', '/api/v1/tenants/sm')).status, 201);
  t.equal(
    (await api('POST', '/api/v1/tenants/sm/destinations', { type: 'webhook', topics: '*', config: { url: `${rx.url}/s` } })).status,
    201,
  );
  const before = await scrape();
  const publish = async (which: string) => {
    const r = await api<{ id: string }>('POST', '/api/v1/publish', {
      tenant_id: 'sm',
      topic: 'user.created',
      data: { which },
      delay_seconds: DELAY_SECONDS,
    });
    t.equal(r.status, 202, which);
    return r.body.id;
  };
  await publish('delivered');
  const canceled = await publish('canceled');
  // The event is stored from the routed topic: cancelable once it is.
  await waitFor(
    'the canceled event canceled',
    async () => (await api('POST', `/api/v1/tenants/sm/events/${canceled}/cancel`)).status === 200,
  );

  const delta = (now: string, name: string, where: Record<string, string>) =>
    (sum(now, name, where) ?? 0) - (sum(before, name, where) ?? 0);
  const type = { type: 'webhook' };
  const after = await waitFor(
    'both scheduled deliveries attempted',
    async () => {
      const now = await scrape();
      return (
        delta(now, 'switchyard_deliveries_total', { ...type, status: 'success' }) === 1 &&
        delta(now, 'switchyard_deliveries_total', { ...type, status: 'canceled', code: 'CANCELED' }) === 1 &&
        now
      );
    },
    60_000,
  );
  t.equal(rx.requests.length, 1, 'one request: the canceled event sent nothing');
  t.equal(delta(after, 'switchyard_delivery_duration_seconds_count', type), 1, 'one answer time: the delivered event');
  t.equal(delta(after, 'switchyard_delivery_latency_seconds_count', type), 1, 'one latency: the delivered event');
  const latency = delta(after, 'switchyard_delivery_latency_seconds_sum', type);
  // From its publish it would be at least the delay; from when it was due, the tiers' release and the request.
  t.ok(latency < DELAY_SECONDS, `latency from when it was due: ${latency.toFixed(3)} s`);
});
