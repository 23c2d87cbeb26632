// The metrics routes in the other service's query form (measures, time[start], time[end],
// granularity, dimensions, filters[...]; routes/metrics-peer.ts, queries/peer-metrics.ts), over a
// small known dataset stored as the attempts service stores it: every measure, dimension and filter,
// buckets (alignment, filling), rates, the tenant rules, the 422s, and our own form beside it,
// unchanged. Every answer is checked against the served document. Run against both databases the
// gateway runs on: Postgres (stack mode) and PGlite (embedded mode).
import t from 'tap';
import { PipelineStore } from '@switchyard/shared/db/stores/pipeline.ts';
import { uuidv7 } from '@switchyard/shared/ids.ts';
import type { AttemptStatus, DestinationType } from '@switchyard/shared/model/index.ts';
import { type Doc, openApiChecker } from '@switchyard/shared/testing/openapi.ts';
import { MetricsTooBroad, peerAttemptMetrics } from '../src/queries/peer-metrics.ts';
import { buildEmbeddedTestApp, buildTestApp, type TestApp } from './helpers.ts';

const SETTINGS = { TOPICS: 'user.created,user.deleted' };
const modes: Array<[string, (t: { teardown(fn: () => unknown): void }) => Promise<TestApp>]> = [
  ['stack (Postgres)', (t) => buildTestApp(t, SETTINGS)],
  ['embedded (PGlite)', (t) => buildEmbeddedTestApp(t, SETTINGS)],
];
const PEER_SDK = 'speakeasy-sdk/typescript 1.6.0 2.938.0 0.0.1 @hookdeck/outpost-sdk';

const DAY = '2026-01-15';
const at = (hm: string) => `${DAY}T${hm}:00Z`;
const START = at('10:00');
const END = at('13:00');
const RANGE_S = 3 * 3600;

type Point = { time_bucket?: string; dimensions: Record<string, string>; metrics: Record<string, number> };
type Answer = { data: Point[]; metadata: Record<string, unknown> };

/** A query string from pairs, so a key may repeat (measures=a&measures=b). */
const qs = (pairs: Array<[string, string]>) => new URLSearchParams(pairs).toString();
const range = (start = START, end = END): Array<[string, string]> => [
  ['time[start]', start],
  ['time[end]', end],
];

for (const [mode, build] of modes) {
  t.test(mode, async (t) => {
    const built = await build(t);
    const openapi = openApiChecker((await built.call('GET', '/api/v1/openapi.json', undefined, null)).body as Doc);
    const call = async (url: string, token?: string | null, headers?: Record<string, string>) => {
      const r = await built.call('GET', url, undefined, token, headers);
      t.same(openapi.check('GET', url, r.status, r.body), [], `GET ${url}: as documented`);
      return r;
    };
    const attempts = (pairs: Array<[string, string]>, opts: { path?: string; token?: string; ua?: string } = {}) =>
      call(`${opts.path ?? '/api/v1/metrics/attempts'}?${qs(pairs)}`, opts.token, opts.ua ? { 'user-agent': opts.ua } : {});
    const events = (pairs: Array<[string, string]>, opts: { path?: string; token?: string } = {}) =>
      call(`${opts.path ?? '/api/v1/metrics/events'}?${qs(pairs)}`, opts.token);
    const mine: Array<[string, string]> = [['filters[tenant_id]', 'mx-co']];

    // The dataset: tenant mx-co with a webhook (dh) and an SQS (dq) destination, and attempts to a
    // destination since deleted (dx); tenant mx-other with one event and one attempt.
    for (const tenant of ['mx-co', 'mx-other']) t.equal((await built.call('PUT', `/api/v1/tenants/${tenant}`)).status, 201);
    const create = async (body: Record<string, unknown>) => {
      const r = await built.call('POST', '/api/v1/tenants/mx-co/destinations', { topics: '*', ...body });
      t.equal(r.status, 201, `destination ${body.type}`);
      return r.body.id as string;
    };
    const dh = await create({ type: 'webhook', config: { url: 'https://example.com/hook' } });
    const dq = await create({
      type: 'sqs',
      config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' },
      credentials: { key: 'AKIA1', secret: 'sqs-secret-1234' },
    });
    const dx = 'dx-deleted';
    const store = new PipelineStore(built.db);
    const event = (tenant: string, id: string, topic: string, hm: string, matched: string[]) => ({
      event: { id, tenant_id: tenant, topic, time: at(hm), eligible_for_retry: true, metadata: null, data: {}, received_at: at(hm) },
      matched_destination_ids: matched,
      skipped_destination_ids: [],
    });
    await store.storeRouted([
      event('mx-co', 'e1', 'user.created', '10:05', [dh]),
      event('mx-co', 'e2', 'user.created', '10:20', [dh, dq]),
      event('mx-co', 'e3', 'user.deleted', '12:10', [dq]),
      event('mx-co', 'e4', 'user.deleted', '12:50', []),
      event('mx-other', 'o1', 'user.created', '10:30', []),
      // Outside the range: counted by nothing below.
      event('mx-co', 'e0', 'user.created', '09:59', [dh]),
    ]);
    const attempt = (
      tenant: string,
      hm: string,
      destination: string,
      type: DestinationType,
      topic: string,
      status: AttemptStatus,
      code: string,
      attempt_number: number,
      manual: boolean,
    ) => ({
      id: uuidv7(),
      tenant_id: tenant,
      destination_id: destination,
      destination_type: type,
      event_id: 'e1',
      topic,
      event_time: at('10:05'),
      event_received_at: at('10:05'),
      status,
      code,
      response_data: {},
      attempt_number,
      manual,
      time: at(hm),
      duration_ms: 3,
      final: true,
    });
    await store.storeAttempts([
      attempt('mx-co', '10:05', dh, 'webhook', 'user.created', 'success', '200', 1, false),
      attempt('mx-co', '10:06', dq, 'sqs', 'user.created', 'failed', '500', 1, false),
      attempt('mx-co', '10:16', dq, 'sqs', 'user.created', 'failed', '500', 2, false),
      attempt('mx-co', '10:31', dq, 'sqs', 'user.created', 'success', '200', 3, false),
      attempt('mx-co', '12:10', dh, 'webhook', 'user.deleted', 'success', '200', 1, true),
      attempt('mx-co', '12:40', dx, 'webhook', 'user.deleted', 'failed', 'ERR', 2, true),
      attempt('mx-other', '10:30', 'od', 'webhook', 'user.created', 'success', '200', 1, false),
      attempt('mx-co', '13:00', dh, 'webhook', 'user.created', 'success', '200', 1, false), // the end is exclusive
    ]);
    const ALL_ATTEMPT_MEASURES = [
      'count',
      'successful_count',
      'failed_count',
      'error_rate',
      'first_attempt_count',
      'retry_count',
      'manual_retry_count',
      'avg_attempt_number',
      'rate',
      'successful_rate',
      'failed_rate',
    ];
    const measures = (...m: string[]): Array<[string, string]> => m.map((x) => ['measures', x]);
    /** The points as `dimension values joined by |` -> metric. */
    const by = (a: Answer, metric = 'count') =>
      Object.fromEntries(a.data.map((p) => [Object.values(p.dimensions).join('|'), p.metrics[metric]]));

    t.test('attempts: every measure over the range', async (t) => {
      const r = await attempts([...range(), ...mine, ...measures(...ALL_ATTEMPT_MEASURES)]);
      t.equal(r.status, 200);
      t.equal(r.body.data.length, 1);
      const p = r.body.data[0] as Point;
      t.notOk('time_bucket' in p, 'no bucket without a granularity');
      t.same(p.dimensions, {});
      t.same(Object.keys(p.metrics).sort(), [...ALL_ATTEMPT_MEASURES].sort(), 'exactly the measures asked for');
      t.equal(p.metrics.count, 6);
      t.equal(p.metrics.successful_count, 3);
      t.equal(p.metrics.failed_count, 3);
      t.equal(p.metrics.error_rate, 0.5);
      t.equal(p.metrics.first_attempt_count, 2, 'attempt 1, not manual');
      t.equal(p.metrics.retry_count, 3, 'attempt_number > 1');
      t.equal(p.metrics.manual_retry_count, 2);
      t.ok(Math.abs((p.metrics.avg_attempt_number as number) - 10 / 6) < 1e-9, 'avg_attempt_number');
      t.equal(p.metrics.rate, 6 / RANGE_S, 'rate: per second of the range');
      t.equal(p.metrics.successful_rate, 3 / RANGE_S);
      t.equal(p.metrics.failed_rate, 3 / RANGE_S);
      t.same(r.body.metadata, { query_time_ms: r.body.metadata.query_time_ms, row_count: 1, row_limit: 100000, truncated: false });
      t.type(r.body.metadata.query_time_ms, 'number');
      // A rate alone: its count is computed, not answered.
      const rate = await attempts([...range(), ...mine, ...measures('failed_rate')]);
      t.same(rate.body.data[0].metrics, { failed_rate: 3 / RANGE_S });
    });

    t.test('attempts: dimensions, as text, destination types by User-Agent', async (t) => {
      const dims = async (d: string, ua?: string) =>
        (await attempts([...range(), ...mine, ...measures('count'), ['dimensions', d]], ua ? { ua } : {})).body as Answer;
      t.same(by(await dims('destination_type')), { '': 1, sqs: 3, webhook: 2 }, "our names; a deleted destination's type is ''");
      t.same(by(await dims('destination_type', PEER_SDK)), { '': 1, aws_sqs: 3, webhook: 2 }, "the other service's names for its SDK");
      t.same(by(await dims('manual')), { false: 4, true: 2 });
      t.same(
        (await dims('manual')).data.map((p) => p.dimensions.manual),
        ['false', 'true'],
        'manual as text',
      );
      t.same(by(await dims('attempt_number')), { 1: 3, 2: 2, 3: 1 });
      t.same(
        (await dims('attempt_number')).data.map((p) => p.dimensions.attempt_number),
        ['1', '2', '3'],
        'attempt_number as text, in numeric order',
      );
      t.same(by(await dims('status')), { failed: 3, success: 3 });
      t.same(by(await dims('code')), { 200: 3, 500: 2, ERR: 1 });
      t.same(by(await dims('topic')), { 'user.created': 4, 'user.deleted': 2 });
      t.same(by(await dims('destination_id')), { [dh]: 2, [dq]: 3, [dx]: 1 });
      // Several at once (each list form): one point per combination.
      for (const form of [
        [['dimensions', 'status,manual']],
        [
          ['dimensions', 'status'],
          ['dimensions', 'manual'],
        ],
        [
          ['dimensions[0]', 'status'],
          ['dimensions[1]', 'manual'],
        ],
        [
          ['dimensions[]', 'status'],
          ['dimensions[]', 'manual'],
        ],
      ] as Array<Array<[string, string]>>) {
        const r = await attempts([...range(), ...mine, ['measures', 'count'], ...form]);
        t.same(by(r.body), { 'failed|false': 2, 'failed|true': 1, 'success|false': 2, 'success|true': 1 }, qs(form));
      }
      // Without a tenant filter the admin key reads every tenant, and may split by it.
      t.same(by((await attempts([...range(), ...measures('count'), ['dimensions', 'tenant_id']])).body), { 'mx-co': 6, 'mx-other': 1 });
    });

    t.test('attempts: filters', async (t) => {
      const count = async (pairs: Array<[string, string]>, ua?: string) =>
        (await attempts([...range(), ...mine, ...measures('count'), ...pairs], ua ? { ua } : {})).body.data[0]?.metrics.count ?? 0;
      t.equal(await count([['filters[destination_type]', 'aws_sqs']]), 3, "the other service's type name");
      t.equal(await count([['filters[destination_type]', 'sqs']]), 3, 'ours');
      t.equal(await count([['filters[destination_type]', 'webhook']]), 2, 'a deleted destination matches no type');
      t.equal(await count([['filters[manual]', 'true']]), 2);
      t.equal(await count([['filters[manual]', 'false']]), 4);
      t.equal(await count([['filters[attempt_number]', '2']]), 2);
      t.equal(
        await count([
          ['filters[attempt_number][]', '2'],
          ['filters[attempt_number][]', '3'],
        ]),
        3,
      );
      t.equal(await count([['filters[code]', '500']]), 2);
      t.equal(await count([['filters[status]', 'failed']]), 3);
      t.equal(await count([['filters[topic]', 'user.deleted']]), 2);
      t.equal(
        await count([
          ['filters[destination_id][0]', dh],
          ['filters[destination_id][1]', dx],
        ]),
        3,
      );
      t.equal(await count([['filters[destination_id]', `${dh},${dx}`]]), 3, 'comma-separated');
      t.equal(
        await count([
          ['filters[status]', 'success'],
          ['filters[topic]', 'user.created'],
        ]),
        2,
        'filters combine',
      );
      t.equal(await count([['filters[code]', '404']]), 0, 'nothing matches: no point');
      t.same(
        (await attempts([...range(), ...measures('count'), ['filters[tenant_id]', 'mx-other']])).body.data[0].metrics,
        { count: 1 },
        'admin: another tenant',
      );
    });

    t.test('attempts: granularity, alignment, filled buckets, rates per bucket', async (t) => {
      const r = await attempts([...range(), ...mine, ['granularity', '1h'], ...measures('count', 'error_rate', 'rate', 'failed_rate')]);
      t.equal(r.status, 200);
      t.same(
        r.body.data.map((p: Point) => [p.time_bucket, p.metrics.count, p.metrics.error_rate, p.metrics.rate, p.metrics.failed_rate]),
        [
          [at('10:00'), 4, 0.5, 4 / 3600, 2 / 3600],
          [at('11:00'), 0, 0, 0, 0],
          [at('12:00'), 2, 0.5, 2 / 3600, 1 / 3600],
        ],
        'every hour of the range, zero where nothing was',
      );
      t.same(r.body.metadata.granularity, '1h');
      t.equal(r.body.metadata.row_count, 3);
      // A start inside a bucket: buckets still start on the hour.
      const off = await attempts([...range(`${DAY}T10:17:42Z`), ...mine, ['granularity', '1h'], ...measures('count')]);
      t.same(
        off.body.data.map((p: Point) => [p.time_bucket, p.metrics.count]),
        [
          [at('10:00'), 1],
          [at('11:00'), 0],
          [at('12:00'), 2],
        ],
      );
      const half = await attempts([...range(), ...mine, ['granularity', '30m'], ...measures('count')]);
      t.same(
        half.body.data.map((p: Point) => p.metrics.count),
        [3, 1, 0, 0, 1, 1],
      );
      // Calendar units: the day, the week from Sunday (15 January 2026 is a Thursday), the month, and
      // several days from 1970-01-01.
      const one = async (g: string) =>
        ((await attempts([...range(), ...mine, ['granularity', g], ...measures('count', 'rate')])).body as Answer).data;
      t.same(
        (await one('1d')).map((p) => [p.time_bucket, p.metrics.count]),
        [[`${DAY}T00:00:00Z`, 6]],
      );
      t.same(
        (await one('1w')).map((p) => [p.time_bucket, p.metrics.count, p.metrics.rate]),
        [['2026-01-11T00:00:00Z', 6, 6 / (7 * 86400)]],
      );
      t.same(
        (await one('1M')).map((p) => [p.time_bucket, p.metrics.count, p.metrics.rate]),
        [['2026-01-01T00:00:00Z', 6, 6 / (31 * 86400)]],
        "a month's rate is per second of that month",
      );
      const twoDays = Math.floor(Date.parse(`${DAY}T00:00:00Z`) / (2 * 86400_000)) * 2 * 86400_000;
      t.same(
        (await one('2d')).map((p) => p.time_bucket),
        [new Date(twoDays).toISOString().replace('.000Z', 'Z')],
      );
      // With dimensions: every bucket per combination found, sorted by their values.
      const split = await attempts([...range(), ...mine, ['granularity', '1h'], ...measures('count'), ['dimensions', 'destination_type']]);
      t.same(
        split.body.data.map((p: Point) => [p.dimensions.destination_type, p.time_bucket, p.metrics.count]),
        [
          ['', at('10:00'), 0],
          ['', at('11:00'), 0],
          ['', at('12:00'), 1],
          ['sqs', at('10:00'), 3],
          ['sqs', at('11:00'), 0],
          ['sqs', at('12:00'), 0],
          ['webhook', at('10:00'), 1],
          ['webhook', at('11:00'), 0],
          ['webhook', at('12:00'), 1],
        ],
      );
      // Nothing in the range: the buckets still come back, in zeros.
      const empty = await attempts([
        ...range('2026-02-01T00:00:00Z', '2026-02-03T00:00:00Z'),
        ...mine,
        ['granularity', '1d'],
        ...measures('count'),
      ]);
      t.same(
        empty.body.data.map((p: Point) => [p.time_bucket, p.metrics.count]),
        [
          ['2026-02-01T00:00:00Z', 0],
          ['2026-02-02T00:00:00Z', 0],
        ],
      );
      const none = await attempts([...range('2026-02-01T00:00:00Z', '2026-02-03T00:00:00Z'), ...mine, ...measures('count')]);
      t.same(none.body.data, [], 'without a granularity, nothing');
    });

    t.test('attempts: month buckets in the first centuries, and before 1970', async (t) => {
      // Rows of a tenant of their own, centuries from the others. Years 2 to 99 are no 1902-1999 here,
      // and a month before 1970 falls in the bucket that starts before it, not in the one after.
      const old = (time: string) => ({ ...attempt('mx-old', '10:00', 'do', 'webhook', 'user.created', 'success', '200', 1, false), time });
      await store.storeAttempts([
        old('0001-03-01T00:00:00Z'),
        old('0003-06-15T12:00:00Z'),
        old('0003-12-31T23:59:59Z'),
        old('0099-07-01T00:00:00Z'),
        old('1969-12-15T00:00:00Z'),
      ]);
      const buckets = async (start: string, end: string, g: string) =>
        (
          (await attempts([...range(start, end), ['filters[tenant_id]', 'mx-old'], ['granularity', g], ...measures('count')]))
            .body as Answer
        ).data.map((p) => [p.time_bucket, p.metrics.count]);
      t.same(await buckets('0001-01-01T00:00:00Z', '0005-01-01T00:00:00Z', '12M'), [
        ['0001-01-01T00:00:00Z', 1],
        ['0002-01-01T00:00:00Z', 0],
        ['0003-01-01T00:00:00Z', 2],
        ['0004-01-01T00:00:00Z', 0],
      ]);
      t.same(await buckets('0099-05-01T00:00:00Z', '0100-01-01T00:00:00Z', '3M'), [
        ['0099-04-01T00:00:00Z', 0],
        ['0099-07-01T00:00:00Z', 1],
        ['0099-10-01T00:00:00Z', 0],
      ]);
      t.same(await buckets('1969-01-01T00:00:00Z', '1971-01-01T00:00:00Z', '12M'), [
        ['1969-01-01T00:00:00Z', 1],
        ['1970-01-01T00:00:00Z', 0],
      ]);
    });

    t.test('events: counts, rates, dimensions, filters, buckets', async (t) => {
      const r = await events([...range(), ...mine, ...measures('count', 'rate')]);
      t.equal(r.status, 200);
      t.same(r.body.data, [{ dimensions: {}, metrics: { count: 4, rate: 4 / RANGE_S } }]);
      const dims = async (d: string, extra: Array<[string, string]> = []) =>
        (await events([...range(), ...mine, ...measures('count'), ['dimensions', d], ...extra])).body as Answer;
      t.same(by(await dims('topic')), { 'user.created': 2, 'user.deleted': 2 });
      t.same(by(await dims('destination_id')), { [dh]: 2, [dq]: 2 }, 'by the destinations each event was sent to');
      t.same(
        by(await dims('destination_id', [['filters[destination_id]', dh]])),
        { [dh]: 2 },
        'split and filtered: the destinations named',
      );
      t.same(by((await events([...range(), ...measures('count'), ['dimensions', 'tenant_id']])).body), { 'mx-co': 4, 'mx-other': 1 });
      const count = async (pairs: Array<[string, string]>) =>
        (await events([...range(), ...mine, ...measures('count'), ...pairs])).body.data[0]?.metrics.count ?? 0;
      t.equal(await count([['filters[destination_id]', dq]]), 2);
      t.equal(await count([['filters[destination_id]', `${dh},${dq}`]]), 3, 'an event sent to both counts once');
      t.equal(await count([['filters[topic]', 'user.deleted']]), 2);
      const hourly = await events([...range(), ...mine, ['granularity', '1h'], ...measures('count', 'rate')]);
      t.same(
        hourly.body.data.map((p: Point) => [p.time_bucket, p.metrics.count, p.metrics.rate]),
        [
          [at('10:00'), 2, 2 / 3600],
          [at('11:00'), 0, 0],
          [at('12:00'), 2, 2 / 3600],
        ],
      );
      t.equal((await events([...range(), ...measures('count'), ['dimensions', 'code']])).status, 422, 'no code dimension on events');
      t.equal((await events([...range(), ...measures('successful_count')])).status, 422, 'no successful_count on events');
      t.equal((await events([...range(), ...measures('count'), ['filters[status]', 'failed']])).status, 422, 'no status filter on events');
    });

    t.test('measures in every list form', async (t) => {
      for (const form of [
        [['measures', 'count,rate']],
        [
          ['measures', 'count'],
          ['measures', 'rate'],
        ],
        [
          ['measures[0]', 'count'],
          ['measures[1]', 'rate'],
        ],
        [
          ['measures[]', 'count'],
          ['measures[]', 'rate'],
        ],
      ] as Array<Array<[string, string]>>) {
        const r = await attempts([...range(), ...mine, ...form]);
        t.same(r.body.data?.[0]?.metrics, { count: 6, rate: 6 / RANGE_S }, qs(form));
      }
    });

    t.test('tenants: a tenant token, a tenant in the path, the admin key', async (t) => {
      const token = (await built.call('GET', '/api/v1/tenants/mx-co/token')).body.token as string;
      const count = (r: { body: Answer }) => r.body.data[0]?.metrics.count;
      t.equal(count(await attempts([...range(), ...measures('count')], { token })), 6, 'a token: its own tenant, set for it');
      t.equal(count(await events([...range(), ...measures('count')], { token })), 4);
      t.equal(count(await attempts([...range(), ...measures('count'), ['filters[tenant_id]', 'mx-co']], { token })), 6, 'its own, named');
      for (const [what, pairs] of [
        ['another tenant', [['filters[tenant_id]', 'mx-other']]],
        ['its own and another', [['filters[tenant_id]', 'mx-co,mx-other']]],
        ['split by tenant', [['dimensions', 'tenant_id']]],
      ] as Array<[string, Array<[string, string]>]>) {
        const r = await attempts([...range(), ...measures('count'), ...pairs], { token });
        t.equal(r.status, 403, `a token: ${what}`);
        t.equal(r.body.code, 'FORBIDDEN');
      }
      t.equal((await events([...range(), ...measures('count'), ['dimensions', 'tenant_id']], { token })).status, 403);
      // Refused before the query is looked at, as the other service does.
      t.equal((await attempts([['dimensions', 'tenant_id']], { token })).status, 403, 'the tenant dimension before the 422s');
      t.equal(
        (await attempts([...range(), ...measures('count')], { token, path: '/api/v1/tenants/mx-other/metrics/attempts' })).status,
        403,
      );
      t.equal(count(await attempts([...range(), ...measures('count')], { token, path: '/api/v1/mx-co/metrics/attempts' })), 6);
      // The admin key: a tenant in the path scopes it; without one, every tenant.
      t.equal(count(await attempts([...range(), ...measures('count')], { path: '/api/v1/tenants/mx-co/metrics/attempts' })), 6);
      t.equal(count(await events([...range(), ...measures('count')], { path: '/api/v1/tenants/mx-other/metrics/events' })), 1);
      t.equal(count(await attempts([...range(), ...measures('count')])), 7, 'every tenant');
      t.same(
        by(
          (await attempts([...range(), ...measures('count'), ['dimensions', 'tenant_id']], { path: '/api/v1/mx-co/metrics/attempts' }))
            .body,
        ),
        { 'mx-co': 6 },
      );
      const clash = await attempts([...range(), ...measures('count'), ['filters[tenant_id]', 'mx-other']], {
        path: '/api/v1/tenants/mx-co/metrics/attempts',
      });
      t.equal(clash.status, 422, 'the admin key: another tenant than the path');
      t.match(clash.body.problems, [{ path: 'query.filters[tenant_id]' }]);
      t.equal((await attempts([...range(), ...measures('count')], { path: '/api/v1/tenants/nobody/metrics/attempts' })).status, 404);
    });

    t.test('422: every problem named, in our error shape', async (t) => {
      const problems = async (pairs: Array<[string, string]>, route = attempts) => {
        const r = await route(pairs);
        t.equal(r.status, 422, qs(pairs));
        t.equal(r.body.code, 'VALIDATION_FAILED');
        return (r.body.problems as Array<{ path: string; message: string }>).map((p) => p.path);
      };
      t.same(await problems(range()), ['query.measures'], 'measures missing');
      t.same(await problems([...range(), ['measures', 'nope']]), ['query.measures'], 'an unknown measure');
      t.same(await problems([...range(), ...measures('count'), ['dimensions', 'nope']]), ['query.dimensions']);
      t.same(await problems([...range(), ...measures('count'), ['filters[nope]', 'x']]), ['query.filters[nope]']);
      t.same(await problems([...range(), ...measures('count'), ['filters[manual]', 'yes']]), ['query.filters[manual]']);
      t.same(await problems([...range(), ...measures('count'), ['filters[attempt_number]', 'first']]), ['query.filters[attempt_number]']);
      t.same(await problems([...range(), ...measures('count'), ['filters[destination_type]', 'carrier_pigeon']]), [
        'query.filters[destination_type]',
      ]);
      t.same(await problems([...range(), ...measures('count'), ['filters[status]', 'pending']]), ['query.filters[status]']);
      for (const g of ['0h', '25h', '61s', '61m', '32d', '5w', '13M', '5x', '1H', 'h', '1.5h'])
        t.same(await problems([...range(), ...measures('count'), ['granularity', g]]), ['query.granularity'], `granularity ${g}`);
      t.same(await problems([...range(END, START), ...measures('count')]), ['query.time[start]'], 'start after end');
      t.same(await problems([...range(START, START), ...measures('count')]), ['query.time[start]'], 'start = end');
      t.same(await problems([['time[end]', END], ...measures('count')]), ['query.time[start]'], 'start missing');
      t.same(await problems([...range('2026-01-15', END), ...measures('count')]), ['query.time[start]'], 'not RFC 3339');
      t.same(await problems([...range(), ...measures('count'), ['time[gte]', START]]), ['query.time[gte]'], "the listings' time bounds");
      // Well formed, but no such day or time: Postgres would refuse it (a 500), so it is ours to refuse.
      for (const [start, end] of [
        ['2026-11-31T00:00:00Z', '2026-12-02T00:00:00Z'],
        ['2026-02-29T12:00:00Z', '2026-03-02T00:00:00Z'],
        ['2026-01-15T24:00:00Z', '2026-01-17T00:00:00Z'],
        ['0000-12-31T00:00:00Z', '2026-01-01T00:00:00Z'],
      ] as Array<[string, string]>) {
        for (const route of [attempts, events]) {
          const r = await route([...range(start, end), ...measures('count')]);
          t.equal(r.status, 422, start);
          t.equal(r.body.code, 'VALIDATION_FAILED', start);
          t.match(r.body.problems, [{ path: 'query.time[start]', message: /RFC 3339/ }], start);
        }
      }
      t.same(await problems([...range('2026-11-30T00:00:00Z', '2026-11-31T00:00:00Z'), ...measures('count')]), ['query.time[end]']);
      t.same(
        await problems([...range('2026-01-01T00:00:00Z', '2026-01-03T00:00:00Z'), ...measures('count'), ['granularity', '1s']]),
        ['query.granularity'],
        'more than 100000 buckets',
      );
      // Mixed with our form: each of ours named.
      t.same(await problems([...range(), ...measures('count'), ['bucket', 'hour'], ['group_by', 'status']]), [
        'query.bucket',
        'query.group_by',
      ]);
      t.same(
        await problems([
          ['start', START],
          ['measures', 'count'],
        ]),
        ['query.start', 'query.time[start]', 'query.time[end]'],
      );
      // Every problem at once.
      t.same(
        await problems([
          ['time[start]', 'soon'],
          ['granularity', '0m'],
          ['measures', 'nope'],
          ['dimensions', 'nope'],
        ]),
        ['query.time[start]', 'query.time[end]', 'query.granularity', 'query.measures', 'query.dimensions'],
      );
      // More points than an answer may hold, once buckets are filled: too broad, narrow it.
      const broad = await attempts([
        ...range(`${DAY}T00:00:00Z`, '2026-01-16T00:00:00Z'),
        ...mine,
        ['granularity', '1s'],
        ...measures('count'),
        ['dimensions', 'code,destination_id,attempt_number,manual'],
      ]);
      t.equal(broad.status, 422);
      t.match(broad.body.message, /too broad.*narrow/);
    });

    t.test('our form answers as before', async (t) => {
      const ours = await call(`/api/v1/tenants/mx-co/metrics/attempts?bucket=hour&start=${START}&end=${END}&group_by=status`);
      t.equal(ours.status, 200);
      t.same(Object.keys(ours.body).sort(), ['bucket', 'end', 'group_by', 'series', 'start', 'total']);
      t.equal(ours.body.total, 6);
      t.same(
        ours.body.series.map((s: Record<string, unknown>) => [s.time, s.status, s.count]),
        [
          ['2026-01-15T10:00:00.000Z', 'failed', 2],
          ['2026-01-15T10:00:00.000Z', 'success', 2],
          ['2026-01-15T12:00:00.000Z', 'failed', 1],
          ['2026-01-15T12:00:00.000Z', 'success', 1],
        ],
      );
      const ev = await call(`/api/v1/metrics/events?bucket=day&start=${START}&end=${END}&tenant_id=mx-co`);
      t.equal(ev.body.total, 4);
      const bad = await call(`/api/v1/metrics/attempts?bucket=week`);
      t.equal(bad.status, 422);
      t.same(bad.body.problems, [{ path: 'query.bucket', message: 'must be one of minute, hour, day' }], "the schema's own check");
      t.equal((await call('/api/v1/metrics/attempts?nope=1')).status, 422, 'an unknown parameter');
    });

    t.test('a canceled attempt counts as the listings show it: failed, code ERR', async (t) => {
      // Its own tenant, so the counts above stay as they are.
      await store.storeAttempts([
        {
          ...attempt('mx-cx', '10:40', 'cx', 'webhook', 'user.created', 'canceled', 'CANCELED', 2, false),
          response_data: { reason: 'destination_disabled' },
        },
        attempt('mx-cx', '10:41', 'cx', 'webhook', 'user.created', 'failed', '500', 1, false),
        attempt('mx-cx', '10:42', 'cx', 'webhook', 'user.created', 'success', '200', 1, false),
      ]);
      const cx: Array<[string, string]> = [['filters[tenant_id]', 'mx-cx']];
      const one = async (pairs: Array<[string, string]>) => (await attempts([...range(), ...cx, ...pairs])).body as Answer;
      const p = (await one(measures('count', 'successful_count', 'failed_count', 'error_rate'))).data[0] as Point;
      t.same(p.metrics, { count: 3, successful_count: 1, failed_count: 2, error_rate: 2 / 3 });
      t.same(by(await one([...measures('count'), ['dimensions', 'status']])), { failed: 2, success: 1 });
      t.same(by(await one([...measures('count'), ['dimensions', 'code']])), { 200: 1, 500: 1, ERR: 1 });
      const count = async (pairs: Array<[string, string]>) => (await one([...measures('count'), ...pairs])).data[0]?.metrics.count ?? 0;
      t.equal(await count([['filters[status]', 'failed']]), 2, 'failed: canceled too');
      t.equal(await count([['filters[status]', 'canceled']]), 1, 'canceled: only those');
      t.equal(await count([['filters[code]', 'ERR']]), 1);
    });

    t.test('a statement past its time is too broad, not an error', async (t) => {
      // PGlite runs a statement to its end (no statement timeout there): Postgres only.
      if (mode.startsWith('embedded')) return;
      // Rows enough that grouping them takes well over the 1 ms allowed, on a day of their own.
      await built.db.raw(`
        INSERT INTO attempts (id, tenant_id, destination_id, event_id, topic, status, code, attempt_number, manual, time)
        SELECT gen_random_uuid(), 'mx-big', 'd' || (i % 50), 'e' || i, 'user.created', 'success', '200', 1 + i % 5, false,
               '2026-03-01T00:00:00Z'::timestamptz + i * interval '100 ms'
          FROM generate_series(1, 200000) AS i`);
      const day = { start: '2026-03-01T00:00:00Z', end: '2026-03-02T00:00:00Z' };
      const q = {
        ...day,
        startMs: Date.parse(day.start),
        endMs: Date.parse(day.end),
        measures: ['count', 'avg_attempt_number'],
        dimensions: ['destination_id', 'attempt_number'],
        filters: {},
      };
      const err = await peerAttemptMetrics(built.db, q, 1).catch((e: unknown) => e);
      t.ok(err instanceof MetricsTooBroad, `1 ms: too broad (${err})`);
      const full = await peerAttemptMetrics(built.db, q);
      t.equal(full.data.length, 50, 'within the default bound it answers: one point per destination (its attempt number follows it)');
      t.equal(
        full.data.reduce((n, p) => n + (p.metrics.count as number), 0),
        200000,
      );
    });
  });
}
