// OpenTelemetry traces end to end: with OTEL_EXPORTER_OTLP_ENDPOINT set, one published event is one
// trace, exported as OTLP/HTTP JSON to a local collector standing in for the real one: the gateway's
// publish span is its root, the router's route span its child (the traceparent carried in the events
// record's headers), the sender's deliver span the route span's child (the delivery record's
// headers), the attempts service's store attempt span the deliver span's child (the attempt
// record's headers). Against Kafka (a process per service); with SWITCHYARD_E2E_MODE=embedded
// (test/embedded/e2e-tracing.test.ts) against the embedded log, in one process.
import { createServer } from 'node:http';
import t from 'tap';
import { e2eMode, listenLocal, startReceiver, startStack, type Teardown, waitFor } from '@switchyard/shared/testing/index.ts';

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: OtlpValue }>;
  /** code: 0 unset, 1 ok, 2 error (absent: unset). */
  status?: { code?: number; message?: string };
}
interface Collected {
  service: string;
  span: OtlpSpan;
}

/** OTLP/JSON ids are hex; base64 (protobuf-style JSON) is accepted too, so the assertion is on the link, not the spelling. */
const hex = (id: string | undefined) => (!id ? '' : /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex'));
const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v?.stringValue ?? v?.intValue ?? v?.boolValue;
};

/** A local OTLP/HTTP trace collector: takes POST /v1/traces as JSON and keeps the spans. */
async function startCollector(t: Teardown) {
  const spans: Collected[] = [];
  const contentTypes = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      contentTypes.add(`${req.method} ${req.url} ${req.headers['content-type'] ?? ''}`);
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: Array<{
            resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
            scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
          }>;
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '');
          for (const ss of rs.scopeSpans ?? []) for (const span of ss.spans ?? []) spans.push({ service, span });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  return { url: (await listenLocal(t, server)).url, spans, contentTypes };
}

t.test('one event is one trace: publish -> route -> deliver -> store attempt', async (t) => {
  const embedded = e2eMode() === 'embedded';
  const collector = await startCollector(t);
  const rx = await startReceiver(t);
  const { api } = await startStack(t, {
    KAFKA_PARTITIONS: '1',
    ROUTER_BATCH_WAIT_MS: '1',
    RETRY_SCHEDULE: '1',
    ATTEMPTS_BATCH_WAIT_MS: '50',
    OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/`,
  });

  const tenant = `trace-tenant-${Date.now().toString(36)}`;
  t.equal((await api('PUT', `/api/v1/tenants/${tenant}`)).status, 201);
  const dest = await api<{ id: string }>('POST', `/api/v1/tenants/${tenant}/destinations`, {
    type: 'webhook',
    topics: ['user.created'],
    config: { url: `${rx.url}/hook` },
  });
  t.equal(dest.status, 201);
  const eventId = `traced-${Date.now().toString(36)}`;
  t.equal((await api('POST', '/api/v1/publish', { id: eventId, tenant_id: tenant, topic: 'user.created', data: { n: 1 } })).status, 202);
  await waitFor('the webhook delivery', () => rx.requests.length >= 1);

  const of = (name: string) => collector.spans.filter((c) => c.span.name === name && attr(c.span, 'switchyard.event_id') === eventId);
  // Each process exports on its own schedule: wait until every step's span has arrived.
  await waitFor(
    'every span of the event exported',
    () => ['publish', 'route', 'deliver', 'store attempt'].every((n) => of(n).length >= 1),
    30_000,
  );

  const [publish, route, deliver, store] = ['publish', 'route', 'deliver', 'store attempt'].map((n) => {
    const found = of(n);
    t.equal(found.length, 1, `one ${n} span for the event`);
    return found[0] as Collected;
  }) as [Collected, Collected, Collected, Collected];

  const traceId = hex(publish.span.traceId);
  t.match(traceId, /^[0-9a-f]{32}$/, 'a trace id');
  t.equal(hex(publish.span.parentSpanId), '', 'publish is the root');
  for (const c of [route, deliver, store]) t.equal(hex(c.span.traceId), traceId, `${c.span.name} is in the same trace`);
  t.equal(hex(route.span.parentSpanId), hex(publish.span.spanId), 'route is a child of publish (events record header)');
  t.equal(hex(deliver.span.parentSpanId), hex(route.span.spanId), 'deliver is a child of route (delivery record header)');
  t.equal(hex(store.span.parentSpanId), hex(deliver.span.spanId), 'store attempt is a child of deliver (attempt record header)');
  // SpanKind: PRODUCER = 4, CONSUMER = 5 (OTLP enum values are one more than the API's).
  t.same(
    [publish, route, deliver, store].map((c) => c.span.kind),
    [4, 5, 5, 5],
    'producer, then consumers',
  );
  t.equal(attr(deliver.span, 'switchyard.status'), 'success');
  t.equal(attr(deliver.span, 'switchyard.destination_id'), dest.body.id);
  t.same(
    [publish, route, deliver, store].map((c) => c.service),
    embedded
      ? ['switchyard-embedded', 'switchyard-embedded', 'switchyard-embedded', 'switchyard-embedded']
      : ['switchyard-gateway', 'switchyard-router', 'switchyard-sender', 'switchyard-attempts'],
    'service.name of each process',
  );
  t.ok(
    [...collector.contentTypes].every((c) => c.startsWith('POST /v1/traces application/json')),
    `OTLP/HTTP JSON to /v1/traces (${[...collector.contentTypes].join(', ')})`,
  );
  // The webhook itself carries no trace header: the trace stays inside the pipeline.
  t.notOk(rx.requests[0]?.headers.traceparent, 'no traceparent sent to the destination');

  // A failed attempt's retry, through the retry tiers, stays in the event's trace: its deliver span
  // is a child of the failed one's (the retry record carries its headers).
  let failures = 0;
  rx.respond((r) => (r.url === '/flaky' && failures++ === 0 ? { status: 503 } : { status: 200 }));
  const flaky = await api<{ id: string }>('POST', `/api/v1/tenants/${tenant}/destinations`, {
    type: 'webhook',
    topics: ['order.paid'],
    config: { url: `${rx.url}/flaky` },
  });
  t.equal(flaky.status, 201);
  const retried = `retried-${Date.now().toString(36)}`;
  t.equal((await api('POST', '/api/v1/publish', { id: retried, tenant_id: tenant, topic: 'order.paid', data: { n: 2 } })).status, 202);
  const spansOf = (name: string) => collector.spans.filter((c) => c.span.name === name && attr(c.span, 'switchyard.event_id') === retried);
  // Each process exports its spans on its own schedule: wait for the sender's as well as the
  // attempts service's, or the second deliver span may not have arrived yet.
  await waitFor(
    'both attempts delivered, stored and exported',
    () => spansOf('store attempt').length >= 2 && spansOf('deliver').length >= 2,
    30_000,
  );
  const delivers = spansOf('deliver').sort(
    (a, b) => Number(attr(a.span, 'switchyard.attempt_number')) - Number(attr(b.span, 'switchyard.attempt_number')),
  );
  t.same(
    delivers.map((c) => [attr(c.span, 'switchyard.attempt_number'), attr(c.span, 'switchyard.status')]),
    [
      [1, 'failed'],
      [2, 'success'],
    ],
  );
  t.equal(delivers[0]?.span.status?.code, 2, 'the deliver span of the failed attempt has status ERROR');
  t.match(delivers[0]?.span.status?.message, /503/, 'its status message says why');
  t.notOk(delivers[1]?.span.status?.code, 'the successful one has no error status');
  const root = hex(spansOf('publish')[0]?.span.traceId);
  t.ok(
    [...spansOf('route'), ...delivers, ...spansOf('store attempt')].every((c) => hex(c.span.traceId) === root),
    'every span of the retried event, both attempts included, is in one trace',
  );
  t.equal(hex(delivers[1]?.span.parentSpanId), hex(delivers[0]?.span.spanId), 'the retry is a child of the failed attempt');
});
