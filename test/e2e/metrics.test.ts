// Prometheus metrics end to end: traffic through every service moves the series of
// shared/src/metrics.ts, each process serves its own /metrics (the gateway on its API port, the
// others on METRICS_PORT), and no label carries a tenant or destination id. With
// SWITCHYARD_E2E_MODE=embedded (test/embedded/e2e-metrics.test.ts) the one process serves every
// series once, through the gateway.
import t from 'tap';
import { createKafkaBus } from '@switchyard/shared/kafka/index.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import {
  apiClient,
  e2eMode,
  metricSum as sum,
  metricsUrl,
  opsPort,
  parseMetrics,
  type ServiceProcess,
  startReceiver,
  startStack,
  waitFor,
} from '@switchyard/shared/testing/index.ts';

async function scrape(url: string): Promise<string> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  return res.text();
}

t.test('metrics move with traffic', async (t) => {
  const embedded = e2eMode() === 'embedded';
  const rx = await startReceiver(t);
  rx.respond((r) => (r.url === '/fail' ? { status: 500 } : r.url === '/hang' ? { status: 200, delayMs: 5_000 } : { status: 200 }));
  const { env, base, api, attempts, router, sender, gateway } = await startStack(t, {
    KAFKA_PARTITIONS: '1',
    RETRY_SCHEDULE: '1,1',
    DELIVERY_TIMEOUT_SECONDS: '2',
    DESTINATION_CONCURRENCY: '1',
    ALERT_CONSECUTIVE_FAILURE_COUNT: '2',
    ALERT_AUTO_DISABLE_DESTINATION: 'true',
    ROUTER_BATCH_WAIT_MS: '1',
    ATTEMPTS_BATCH_WAIT_MS: '50',
  });
  // Every series of the deployment: embedded mode serves them all once, through the gateway.
  const urls = {
    gateway: `${base}/metrics`,
    router: await metricsUrl(router, base),
    sender: await metricsUrl(sender, base),
    attempts: await metricsUrl(attempts, base),
  };

  const tenant = `metrics-tenant-${Date.now().toString(36)}`;
  t.equal((await api('PUT', `/api/v1/tenants/${tenant}`)).status, 201);
  const dest = async (path: string, topics: string[]) =>
    (
      await api<{ id: string }>('POST', `/api/v1/tenants/${tenant}/destinations`, {
        type: 'webhook',
        topics,
        config: { url: `${rx.url}${path}` },
      })
    ).body.id;
  const ok = await dest('/ok', ['user.created']);
  const failing = await dest('/fail', ['user.failed']);
  const hanging = await dest('/hang', ['user.hang']);

  const before = await scrape(urls.sender);
  for (let i = 0; i < 5; i++) {
    t.equal((await api('POST', '/api/v1/publish', { id: `ok-${i}`, tenant_id: tenant, topic: 'user.created', data: { i } })).status, 202);
  }
  t.equal((await api('POST', '/api/v1/publish', { id: 'ok-0', tenant_id: tenant, topic: 'user.created', data: { i: 0 } })).status, 202);
  await api('POST', '/api/v1/publish', { tenant_id: tenant, topic: 'user.failed', data: {} });
  for (let i = 0; i < 4; i++) await api('POST', '/api/v1/publish', { tenant_id: tenant, topic: 'user.hang', data: { i } });
  await api('GET', `/api/v1/tenants/${tenant}/destinations/${ok}`);

  t.test('gateway: HTTP by route pattern, publishes', async (t) => {
    const text = await scrape(urls.gateway);
    t.ok((sum(text, 'switchyard_http_requests_total', { method: 'POST', route: '/api/v1/publish', status: '202' }) ?? 0) >= 10);
    t.ok(
      (sum(text, 'switchyard_http_request_duration_seconds_count', {
        method: 'GET',
        route: '/api/v1/tenants/:tenant_id/destinations/:destination_id',
        status: '200',
      }) ?? 0) >= 1,
      'latency by route pattern',
    );
    t.ok((sum(text, 'switchyard_events_published_total', { outcome: 'accepted' }) ?? 0) >= 10);
    t.ok((sum(text, 'switchyard_events_published_total', { outcome: 'duplicate' }) ?? 0) >= 1);
    t.ok((sum(text, 'switchyard_records_produced_total', { topic: 'events' }) ?? 0) >= 10);
    t.ok((sum(text, 'switchyard_db_pool_connections', { state: 'free' }) ?? -1) >= 0, 'pool gauge');
  });

  t.test('sender: deliveries by outcome, latency, retries, parking, in flight', async (t) => {
    const text = await waitFor(
      'deliveries and parks counted',
      async () => {
        const s = await scrape(urls.sender);
        const okCount = sum(s, 'switchyard_deliveries_total', { type: 'webhook', status: 'success', code: '200' }) ?? 0;
        return okCount >= 5 && (sum(s, 'switchyard_deliveries_parked_total') ?? 0) >= 1 && s;
      },
      30_000,
    );
    t.ok((sum(text, 'switchyard_deliveries_total', { type: 'webhook', status: 'failed', code: '500' }) ?? 0) >= 1, 'failures by code');
    const latency =
      (sum(text, 'switchyard_delivery_latency_seconds_count', { type: 'webhook' }) ?? 0) -
      (sum(before, 'switchyard_delivery_latency_seconds_count', { type: 'webhook' }) ?? 0);
    t.ok(latency >= 6, `publish -> attempt latency observed (${latency})`);
    t.ok((sum(text, 'switchyard_retries_scheduled_total', { tier: '1s' }) ?? 0) >= 1, 'retries by tier');
    t.ok((sum(text, 'switchyard_parked_destinations', { group: 'sender-webhook' }) ?? 0) >= 1, 'parked destinations');
    t.not(sum(text, 'switchyard_consumer_inflight_records', { group: 'sender-webhook' }), undefined, 'in-flight gauge');
    t.ok((sum(text, 'switchyard_records_produced_total', { topic: 'attempts' }) ?? 0) >= 6);
    t.ok((sum(text, 'switchyard_records_consumed_total', { group: 'sender-webhook', topic: 'deliveries.webhook' }) ?? 0) >= 5);
    t.not(sum(text, 'switchyard_consumer_lag_records', { group: 'sender-webhook', topic: 'deliveries.webhook' }), undefined, 'lag series');
    t.ok((sum(text, 'switchyard_delivery_duration_seconds_count', { type: 'webhook' }) ?? 0) >= 6);
  });

  t.test('router and attempts: batches, lag, operator events', async (t) => {
    const r = await waitFor('router lag caught up', async () => {
      const s = await scrape(urls.router);
      return sum(s, 'switchyard_consumer_lag_records', { group: 'router', topic: 'events', partition: '0' }) === 0 && s;
    });
    t.ok((sum(r, 'switchyard_consumer_batch_records_count', { group: 'router' }) ?? 0) >= 1, 'router batches');
    t.ok((sum(r, 'switchyard_records_consumed_total', { group: 'router', topic: 'events' }) ?? 0) >= 10);
    const a = await waitFor('attempts stored and alert raised', async () => {
      const s = await scrape(urls.attempts);
      return (sum(s, 'switchyard_operator_events_total', { type: 'alert.consecutive_failure' }) ?? 0) >= 1 && s;
    });
    t.ok((sum(a, 'switchyard_consumer_batch_records_sum', { group: 'attempts' }) ?? 0) >= 6, 'attempt batches');
    t.ok((sum(a, 'switchyard_consumer_batch_records_count', { group: 'attempts-routed' }) ?? 0) >= 1, 'routed batches');
    t.not(sum(a, 'switchyard_consumer_lag_records', { group: 'attempts' }), undefined);
    t.ok((sum(a, 'switchyard_db_pool_connections', { state: 'used' }) ?? -1) >= 0);
    t.not(sum(a, 'process_cpu_seconds_total'), undefined, 'default process metrics');
  });

  t.test('destination health and operator events through the API', async (t) => {
    const events = await waitFor('auto-disable listed', async () => {
      const r = await api<{ models: Array<{ type: string; destination_id: string; tenant_id: string }> }>(
        'GET',
        // The hanging destination's timeouts may reach the threshold too, the later the busier the
        // machine: the failing destination's events are the ones checked.
        `/api/v1/tenants/${tenant}/operator-events?destination_id=${failing}`,
      );
      return r.body.models.some((e) => e.type === 'destination.auto_disabled') && r.body.models;
    });
    t.same(
      events.map((e) => [e.type, e.destination_id]).sort(),
      [
        ['alert.consecutive_failure', failing],
        ['destination.auto_disabled', failing],
      ],
      'an alert and an auto-disable of the failing destination',
    );
    const health = await api<Record<string, unknown>>('GET', `/api/v1/tenants/${tenant}/destinations/${failing}/health`);
    t.equal(health.status, 200);
    t.match(health.body, {
      destination_id: failing,
      consecutive_failures: Number,
      last_success_at: null,
      last_failure_code: '500',
      disabled_reason: 'consecutive_failures',
    });
    t.ok((health.body.consecutive_failures as number) >= 2);
    t.type(health.body.last_failure_at, 'string');
    const good = await api<Record<string, unknown>>('GET', `/api/v1/${tenant}/destinations/${ok}/health`);
    t.match(good.body, {
      consecutive_failures: 0,
      last_success_at: String,
      last_failure_at: null,
      disabled_at: null,
      disabled_reason: null,
    });
    // Disabled by hand: the reason says so.
    t.equal((await api('PUT', `/api/v1/tenants/${tenant}/destinations/${ok}/disable`)).status, 200);
    t.match((await api('GET', `/api/v1/tenants/${tenant}/destinations/${ok}/health`)).body, { disabled_reason: 'manual' });
    t.equal((await api('GET', `/api/v1/tenants/${tenant}/destinations/nope/health`)).status, 404);

    // Tenant-scoped with a tenant token; another tenant's token sees none of it; the admin sees every tenant.
    const other = `${tenant}-other`;
    await api('PUT', `/api/v1/tenants/${other}`);
    const token = async (id: string) => (await api<{ token: string }>('GET', `/api/v1/tenants/${id}/token`)).body.token;
    const mine = apiClient(base, await token(tenant));
    const theirs = apiClient(base, await token(other));
    t.equal(
      (await mine<{ models: unknown[] }>('GET', `/api/v1/operator-events?type=destination.auto_disabled&destination_id=${failing}`)).body
        .models.length,
      1,
    );
    t.equal((await theirs<{ models: unknown[] }>('GET', '/api/v1/operator-events')).body.models.length, 0);
    t.equal((await theirs('GET', `/api/v1/tenants/${tenant}/operator-events`)).status, 403);
    t.equal((await theirs('GET', `/api/v1/tenants/${tenant}/destinations/${failing}/health`)).status, 403);
    const all = await api<{ models: Array<{ tenant_id: string }> }>('GET', '/api/v1/operator-events?limit=1000');
    t.ok(
      all.body.models.some((e) => e.tenant_id === tenant),
      'admin lists every tenant',
    );
  });

  t.test('a broadcast group that has handled everything reads lag 0', async (t) => {
    // The destinations created, the auto-disable and the manual disable above are records of
    // destination-changes, which every sender reads (a broadcast group that commits nothing).
    const where = { group: 'sender-destination-changes', topic: 'destination-changes' };
    const text = await waitFor('the destination-changes lag drained', async () => {
      const s = await scrape(urls.sender);
      return sum(s, 'switchyard_consumer_lag_records', where) === 0 && s;
    });
    const series = parseMetrics(text).filter(
      (x) => x.name === 'switchyard_consumer_lag_records' && x.labels.group === where.group && x.labels.topic === where.topic,
    );
    t.ok(series.length >= 1, 'a series per partition');
    t.ok(
      series.every((x) => x.value === 0),
      'lag 0 on every partition',
    );
  });

  t.test('metrics API: counts and rates per bucket, tenant-scoped', async (t) => {
    type Counts = { total: number; series: Array<Record<string, string | number>> };
    const events = await waitFor('events counted', async () => {
      const r = await api<Counts>('GET', `/api/v1/tenants/${tenant}/metrics/events?bucket=minute&group_by=topic`);
      return r.body.total >= 10 && r.body;
    });
    const byTopic = (c: Counts, topic: string) => c.series.filter((s) => s.topic === topic).reduce((a, s) => a + (s.count as number), 0);
    t.equal(byTopic(events, 'user.created'), 5, 'five events, the duplicate publish not counted');
    t.equal(byTopic(events, 'user.hang'), 4);
    t.ok(
      events.series.every((s) => s.rate === (s.count as number) / 60),
      'rate: per second of the bucket',
    );

    const attempts = await waitFor('attempts counted', async () => {
      const r = await api<Counts>('GET', `/api/v1/${tenant}/metrics/attempts?bucket=hour&group_by=status,code`);
      const ok200 = r.body.series.filter((s) => s.status === 'success' && s.code === '200').reduce((a, s) => a + (s.count as number), 0);
      return ok200 >= 5 && r.body;
    });
    t.ok(
      attempts.series.some((s) => s.status === 'failed' && s.code === '500' && (s.count as number) >= 2),
      'failures by code',
    );
    const one = await api<Counts>(
      'GET',
      `/api/v1/tenants/${tenant}/metrics/attempts?bucket=day&destination_id=${failing}&group_by=destination_id`,
    );
    t.ok(one.body.series.every((s) => s.destination_id === failing) && one.body.total >= 2, 'filtered by destination');

    const token = (await api<{ token: string }>('GET', `/api/v1/tenants/${tenant}/token`)).body.token;
    // Retries may still be attempted meanwhile: the totals are compared once they hold still.
    const totals = await waitFor('the same total through every path', async () => {
      const [hour, mine, admin, minute] = await Promise.all([
        api<Counts>('GET', `/api/v1/${tenant}/metrics/attempts?bucket=hour`),
        apiClient(base, token)<Counts>('GET', '/api/v1/metrics/attempts?bucket=day'),
        api<Counts>('GET', `/api/v1/metrics/attempts?bucket=day&tenant_id=${tenant}`),
        api<Counts>('GET', `/api/v1/tenants/${tenant}/metrics/attempts?bucket=minute&group_by=status`),
      ]);
      const all = [hour, mine, admin, minute].map((r) => r.body.total);
      return mine.status === 200 && all.every((x) => x === all[0]) && all;
    });
    t.ok((totals[0] as number) >= attempts.total, 'a tenant token, the admin key across tenants, and minute and hour buckets agree');
    const otherToken = (await api<{ token: string }>('GET', `/api/v1/tenants/${tenant}-other/token`)).body.token;
    t.equal((await apiClient(base, otherToken)<Counts>('GET', '/api/v1/metrics/attempts')).body.total, 0, 'another tenant sees none');
    t.equal((await apiClient(base, otherToken)('GET', `/api/v1/tenants/${tenant}/metrics/attempts`)).status, 403);
    t.equal((await api('GET', `/api/v1/tenants/${tenant}/metrics/attempts?group_by=tenant_id`)).status, 422, 'unknown dimension');
    t.equal(
      (await api('GET', `/api/v1/tenants/${tenant}/metrics/attempts?bucket=minute&group_by=destination_id`)).status,
      422,
      'minute buckets are not kept per destination',
    );
    t.equal(
      (await api('GET', `/api/v1/tenants/${tenant}/metrics/attempts?bucket=minute&start=2026-01-01T00:00:00Z&end=2026-03-01T00:00:00Z`))
        .status,
      422,
      'too many buckets',
    );
  });

  t.test('no tenant or destination id in any label', async (t) => {
    for (const url of new Set(Object.values(urls))) {
      const text = await scrape(url);
      for (const id of [tenant, ok, failing, hanging]) t.notOk(text.includes(id), `${id} not in ${url}`);
    }
  });

  // Only a direct producer writes a record the router cannot read (the embedded log has none).
  if (!embedded)
    t.test('dead-lettered records are counted', async (t) => {
      const bus = createKafkaBus({
        brokers: [env.KAFKA_BROKERS as string],
        clientId: 'metrics-test',
        topicPrefix: env.KAFKA_TOPIC_PREFIX as string,
        partitions: 1,
        replicationFactor: 1,
        log: createLogger('test', 'silent'),
      });
      t.teardown(() => bus.close());
      const producer = await bus.producer();
      await producer.send(TOPIC.events, [{ key: tenant, value: Buffer.from('not json') }]);
      await waitFor(
        'dead letter counted',
        async () => (sum(await scrape(urls.router), 'switchyard_dead_lettered_records_total', { topic: 'events.dead-letter' }) ?? 0) >= 1,
      );
      t.pass('switchyard_dead_lettered_records_total moved');
    });

  t.test('probes', async (t) => {
    const live = await fetch(`${base}/livez`);
    t.equal(live.status, 200);
    const ready = await fetch(`${base}/readyz`);
    t.equal(ready.status, 200);
    t.same(await ready.json(), { status: 'ready', checks: { postgres: 'ok', kafka: 'ok' } });
    if (!embedded) {
      for (const p of [router, sender, attempts]) {
        const r = await fetch(`http://127.0.0.1:${await opsPort(p)}/readyz`);
        t.equal(r.status, 200, `${p.name} ready`);
      }
    }
  });

  // Last: the services are stopped, and write what they counted since their last summary.
  t.test('logs at info: a summary per service, no line per event or per successful attempt', async (t) => {
    const lines = (p: ServiceProcess) =>
      p
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const procs = embedded ? [gateway] : [gateway, router, sender, attempts];
    for (const p of procs) await p.stop();
    const all = procs.flatMap(lines);
    const info = all.filter((l) => l.level === 'info');
    const one = (msg: string) => info.filter((l) => l.msg === msg).at(-1) ?? {};
    t.ok((one('router summary').events_routed as number) >= 10, 'router summary: events routed');
    t.ok((one('router summary').deliveries as number) >= 10, 'router summary: deliveries');
    t.ok((one('sender summary').succeeded as number) >= 5, 'sender summary: successful attempts');
    t.ok((one('sender summary').failed as number) >= 2, 'sender summary: failed attempts');
    t.ok((one('gateway summary').accepted as number) >= 10, 'gateway summary: publishes accepted');
    t.ok((one('gateway summary').duplicates as number) >= 1, 'gateway summary: duplicates');
    t.same(
      info.filter((l) => l.msg === 'route' || l.msg === 'publish'),
      [],
      'no line per routed or published event at info',
    );
    const attemptLines = info.filter((l) => l.msg === 'attempt');
    t.ok(attemptLines.length >= 2, 'a failed attempt is a line at info');
    t.ok(
      attemptLines.every((l) => l.status === 'failed'),
      'a successful one is not',
    );
  });
});
