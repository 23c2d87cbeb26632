// Consumer lag and in-flight records as the metrics report them, on both buses (the real broker and
// the embedded log), the ops listener's probes against reachable and unreachable dependencies, and
// what an attempt adds to the delivery series.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createDb } from '../src/db/index.ts';
import { createEmbeddedBus } from '../src/embedded/bus.ts';
import type { Bus } from '../src/bus/index.ts';
import { createKafkaBus } from '../src/kafka/index.ts';
import type { TopicDef } from '../src/bus/topics.ts';
import { createLogger } from '../src/log.ts';
import { instrumentBus, observeAttempt, registry } from '../src/metrics.ts';
import type { AttemptRecord } from '../src/model/index.ts';
import { readiness, serveOps } from '../src/ops.ts';
import { uniqueName, waitFor } from '../src/testing/index.ts';

const log = createLogger('test', 'silent');
const brokers = [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'];
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/switchyard';

async function gauge(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const m = await registry.getSingleMetric(name)?.get();
  return m?.values.find((v) => Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x))?.value;
}

async function lagAndInflight(t: Test, make: (t: Test) => Promise<Bus>) {
  const topic: TopicDef = { name: uniqueName('lagged'), key: 'k', description: 'test' };
  const bus = instrumentBus(await make(t));
  t.teardown(() => bus.close());
  await bus.ensureTopics([topic]);
  const producer = await bus.producer();
  await producer.send(
    topic,
    Array.from({ length: 5 }, (_, i) => ({ key: 'same', value: { i } })),
  );
  const group = uniqueName('g');
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let started = 0;
  await bus.consume<{ i: number }>({
    groupId: group,
    topics: [topic],
    commitIntervalMs: 100,
    async handle() {
      started++;
      await gate;
    },
  });
  await waitFor('first record in flight', () => started === 1);
  t.equal(await gauge('switchyard_consumer_inflight_records', { group }), 1, 'one record in flight');
  t.equal(await gauge('switchyard_consumer_lag_records', { group, topic: topic.name, partition: '0' }), 5, 'nothing committed: lag 5');
  release();
  await waitFor(
    'lag back to 0',
    async () => (await gauge('switchyard_consumer_lag_records', { group, topic: topic.name, partition: '0' })) === 0,
    20_000,
  );
  t.equal(await gauge('switchyard_consumer_inflight_records', { group }), 0, 'nothing in flight');
  const consumed = await registry.getSingleMetric('switchyard_records_consumed_total')?.get();
  t.equal(consumed?.values.find((v) => v.labels.group === group)?.value, 5, 'five consumed');
}

t.test('lag and in-flight records: embedded log', (t) =>
  lagAndInflight(t, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-metrics-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    return createEmbeddedBus({ dir, topicPrefix: 'm.', partitions: 1, log });
  }),
);

t.test('lag and in-flight records: Kafka', (t) =>
  lagAndInflight(t, async () =>
    createKafkaBus({ brokers, clientId: 'metrics-test', topicPrefix: `${uniqueName('m')}.`, partitions: 1, replicationFactor: 1, log }),
  ),
);

/**
 * A broadcast group (every instance reads everything from its start, commits nothing): lag is where
 * this process's reader is, so records written before it started are not lag, and once it has
 * handled everything every partition reads 0, though the group never committed an offset.
 */
async function broadcastLag(t: Test, make: (t: Test) => Promise<Bus>) {
  const topic: TopicDef = { name: uniqueName('changes'), key: 'k', description: 'test' };
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const bus = instrumentBus(await make(t));
  t.teardown(() => {
    release();
    return bus.close();
  });
  await bus.ensureTopics([topic]);
  const producer = await bus.producer();
  const keys = Array.from({ length: 12 }, (_, i) => `tenant-${i}`);
  await producer.send(
    topic,
    keys.map((key) => ({ key, value: { before: true } })),
  );
  const group = uniqueName('b');
  const lags = async () => {
    const m = await registry.getSingleMetric('switchyard_consumer_lag_records')?.get();
    return (m?.values ?? []).filter((v) => v.labels.group === group && v.labels.topic === topic.name);
  };
  const handled: string[] = [];
  await bus.consume<{ before?: boolean }>({
    groupId: group,
    topics: [topic],
    broadcast: true,
    concurrency: 16,
    async handle(r) {
      await gate;
      handled.push(r.key);
    },
  });
  const atStart = await lags();
  t.equal(atStart.length, 3, 'a series per partition');
  t.same(
    atStart.map((v) => v.value),
    [0, 0, 0],
    'records from before the reader started are not its lag',
  );
  await producer.send(
    topic,
    keys.map((key) => ({ key, value: {} })),
  );
  await waitFor('the new records counted as lag', async () => (await lags()).reduce((n, v) => n + v.value, 0) === keys.length);
  release();
  await waitFor('every record handled', () => handled.length === keys.length);
  await waitFor('lag 0 on every partition', async () => (await lags()).every((v) => v.value === 0));
  t.same(
    (await lags()).map((v) => v.value),
    [0, 0, 0],
    'everything handled: lag 0 on every partition',
  );
}

t.test('broadcast lag: embedded log', (t) =>
  broadcastLag(t, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-metrics-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    return createEmbeddedBus({ dir, topicPrefix: 'm.', partitions: 3, log });
  }),
);

t.test('broadcast lag: Kafka', (t) =>
  broadcastLag(t, async () =>
    createKafkaBus({ brokers, clientId: 'metrics-test', topicPrefix: `${uniqueName('m')}.`, partitions: 3, replicationFactor: 1, log }),
  ),
);

t.test('readiness names the dependency that does not answer', async (t) => {
  const good = {
    db: createDb({ url: databaseUrl, poolMax: 1 }),
    bus: createKafkaBus({ brokers, clientId: 'ready', topicPrefix: 'r.', partitions: 1, replicationFactor: 1, log }),
  };
  const bad = {
    db: createDb({ url: 'postgres://postgres@127.0.0.1:1/none', poolMax: 1 }),
    bus: createKafkaBus({ brokers: ['127.0.0.1:1'], clientId: 'ready', topicPrefix: 'r.', partitions: 1, replicationFactor: 1, log }),
  };
  t.teardown(async () => {
    for (const x of [good, bad]) {
      await x.bus.close();
      await x.db.destroy();
    }
  });
  t.same(await readiness(good), { ready: true, checks: { postgres: 'ok', kafka: 'ok' } });
  t.same(await readiness(bad), { ready: false, checks: { postgres: 'failed', kafka: 'failed' } });
  t.same(await readiness({ db: good.db, bus: bad.bus }), { ready: false, checks: { postgres: 'ok', kafka: 'failed' } });

  const ops = await serveOps({ ...bad, logger: log }, '127.0.0.1', 0);
  t.teardown(() => ops.close());
  const url = `http://127.0.0.1:${(ops.server.address() as { port: number }).port}`;
  t.equal((await fetch(`${url}/livez`)).status, 200, 'alive while its dependencies are down');
  const ready = await fetch(`${url}/readyz`);
  t.equal(ready.status, 503);
  t.same(await ready.json(), { status: 'not_ready', checks: { postgres: 'failed', kafka: 'failed' } });
  const metrics = await fetch(`${url}/metrics`);
  t.equal(metrics.status, 200);
  t.match(metrics.headers.get('content-type'), /^text\/plain/);
  t.match(await metrics.text(), /# TYPE switchyard_deliveries_total counter/);
  t.equal((await fetch(`${url}/nothing`)).status, 404);
  const post = await fetch(`${url}/metrics`, { method: 'POST' });
  t.equal(post.status, 405);
  t.equal(post.headers.get('allow'), 'GET, HEAD');
});

/** An attempt's series of one destination type: its outcome counter and both histograms' counts and sums. */
async function deliverySeries(type: string) {
  const sample = async (name: string, labels: Record<string, string>) =>
    (await registry.getSingleMetric(name.replace(/_(count|sum)$/, ''))?.get())?.values.find(
      (v) =>
        ((v as { metricName?: string }).metricName ?? name) === name && Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x),
    )?.value ?? 0;
  return {
    canceled: await sample('switchyard_deliveries_total', { type, status: 'canceled', code: 'CANCELED' }),
    succeeded: await sample('switchyard_deliveries_total', { type, status: 'success', code: '200' }),
    durations: await sample('switchyard_delivery_duration_seconds_count', { type }),
    latencies: await sample('switchyard_delivery_latency_seconds_count', { type }),
    latencySum: await sample('switchyard_delivery_latency_seconds_sum', { type }),
  };
}

function attempt(over: Partial<AttemptRecord>): AttemptRecord {
  const now = Date.now();
  return {
    id: uniqueName('a'),
    tenant_id: 't',
    destination_id: 'd',
    destination_type: 'sqs',
    event_id: uniqueName('e'),
    topic: 'order.paid',
    event_time: new Date(now - 3_600_000).toISOString(),
    event_received_at: new Date(now - 3_600_000).toISOString(),
    status: 'success',
    code: '200',
    response_data: null,
    attempt_number: 1,
    manual: false,
    time: new Date(now).toISOString(),
    duration_ms: 40,
    final: true,
    next_attempt_at: null,
    ...over,
  };
}

t.test('a canceled attempt is counted by its status and code, and observes no time', async (t) => {
  const before = await deliverySeries('sqs');
  observeAttempt(attempt({ status: 'canceled', code: 'CANCELED', duration_ms: 1, response_data: { reason: 'destination_disabled' } }));
  const after = await deliverySeries('sqs');
  t.equal(after.canceled - before.canceled, 1, 'switchyard_deliveries_total{status="canceled",code="CANCELED"}');
  t.equal(after.durations, before.durations, 'no answer time: nothing was sent');
  t.equal(after.latencies, before.latencies, 'no publish -> answer latency either');
});

t.test("a scheduled event's latency runs from when it was due, not from its publish", async (t) => {
  const before = await deliverySeries('sqs');
  // Published an hour ago for now - 2 s, answered now.
  const a = attempt({});
  observeAttempt(a, new Date(Date.parse(a.time) - 2_000).toISOString());
  // Not scheduled: from its publish, as before.
  const b = attempt({ time: a.time, event_received_at: new Date(Date.parse(a.time) - 5_000).toISOString() });
  observeAttempt(b);
  // deliver_at before its receipt (due already when published): from its receipt.
  const c = attempt({ time: a.time, event_received_at: new Date(Date.parse(a.time) - 3_000).toISOString() });
  observeAttempt(c, new Date(Date.parse(a.time) - 60_000).toISOString());
  const after = await deliverySeries('sqs');
  t.equal(after.succeeded - before.succeeded, 3);
  t.equal(after.durations - before.durations, 3, 'every answer timed');
  t.equal(after.latencies - before.latencies, 3);
  t.equal(
    Math.round((after.latencySum - before.latencySum) * 1000),
    2_000 + 5_000 + 3_000,
    'due -> answer 2 s, publish -> answer 5 s and 3 s',
  );
});
