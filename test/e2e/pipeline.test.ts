// The delivery pipeline end to end: every service its own process, the real broker and Postgres; with
// SWITCHYARD_E2E_MODE=embedded (test/embedded/e2e-pipeline.test.ts), one embedded process instead.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { createDb } from '@switchyard/shared/db/index.ts';
import type { InRecord } from '@switchyard/shared/bus/index.ts';
import { createKafkaBus } from '@switchyard/shared/kafka/index.ts';
import { allTopics, TOPIC } from '@switchyard/shared/bus/topics.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { OperatorEvent } from '@switchyard/shared/model/index.ts';
import { type DestinationCreate, ok, type PublishRequest } from '@switchyard/client';
import { e2eMode, freePort, ROOT, startReceiver, startService, startStack, waitFor } from '@switchyard/shared/testing/index.ts';
import { e2eClient } from './client.ts';

interface AttemptRow {
  id: string;
  event_id: string;
  destination_id: string;
  status: string;
  code: string;
  attempt_number: number;
  manual: boolean;
  final: boolean;
  response_data: Record<string, unknown> | null;
}

t.test('delivery pipeline', async (t) => {
  // Processes started inside a subtest live as long as the whole suite.
  const suite = t;
  const port2 = await freePort();
  const callback = await startReceiver(t);
  const stack = await startStack(t, {
    TOPICS: 'user.created,user.deleted,order.paid,order.refunded',
    KAFKA_PARTITIONS: '1',
    RETRY_SCHEDULE: '1,1,1',
    DELIVERY_TIMEOUT_SECONDS: '2',
    ALERT_CONSECUTIVE_FAILURE_COUNT: '5',
    ALERT_AUTO_DISABLE_DESTINATION: 'true',
    OPERATOR_CALLBACK_URL: `${callback.url}/operator`,
    OPERATOR_CALLBACK_SECRET: 'operator-secret',
    DESTINATION_CONCURRENCY: '2',
    SENDER_CONCURRENCY: '8',
  });
  const { env, base } = stack;
  let sender = stack.sender;
  await startService(t, 'gateway', { ...env, API_PORT: String(port2) });
  // Both gateways through the typed client; every answer is checked against the served document.
  const c1 = await e2eClient(base, env.API_KEY as string);
  const c2 = await e2eClient(`http://127.0.0.1:${port2}`, env.API_KEY as string);
  const api = c1.call;
  // Embedded mode: the log and the database belong to the one service process, so the suite reads
  // attempts through the API there (the same rows) and skips what needs the raw log or columns.
  const embedded = e2eMode() === 'embedded';
  const db = embedded ? null : createDb({ url: env.DATABASE_URL as string, poolMax: 2 });
  t.teardown(() => db?.destroy());
  const bus = embedded
    ? null
    : createKafkaBus({
        brokers: [env.KAFKA_BROKERS as string],
        clientId: 'e2e',
        topicPrefix: env.KAFKA_TOPIC_PREFIX as string,
        partitions: 1,
        replicationFactor: 1,
        log: createLogger('e2e', 'silent'),
      });
  t.teardown(() => bus?.close());
  const producer = await bus?.producer();

  /** Attempts matching `where`, oldest first. */
  const attemptRows = async (where: { event_id?: string; destination_id?: string }): Promise<AttemptRow[]> => {
    if (db)
      return (await db('attempts')
        .where(where)
        .orderBy([{ column: 'time' }, { column: 'id' }])) as AttemptRow[];
    const r = await api<{ models: AttemptRow[] }>(
      'GET',
      `/api/v1/attempts?${new URLSearchParams({ ...where, dir: 'asc', limit: '1000' })}`,
    );
    return r.body.models;
  };
  const attemptsOf = (eventId: string) => attemptRows({ event_id: eventId });
  const publish = (body: Omit<PublishRequest, 'eligible_for_retry'> & { eligible_for_retry?: boolean }, client = c1) =>
    ok(client.api.POST('/api/v1/publish', { body: { eligible_for_retry: true, ...body } }));
  const hook = async (tenant: string, path: string, extra: Partial<DestinationCreate> = {}, receiverUrl?: string) => {
    const created = await ok(
      c1.api.POST('/api/v1/tenants/{tenant_id}/destinations', {
        params: { path: { tenant_id: tenant } },
        body: { type: 'webhook', topics: '*', config: { url: `${receiverUrl}${path}` }, ...extra },
      }),
    );
    return created.id;
  };
  const rx = await startReceiver(t);
  const at = (path: string) => rx.requests.filter((r) => r.url === path);

  t.test('fan-out, topics, wildcards, filters and destination_id targeting', async (t) => {
    await api('PUT', '/api/v1/tenants/fan');
    const all = await hook('fan', '/all', {}, rx.url);
    const users = await hook('fan', '/users', { topics: ['user.created', 'user.deleted'] }, rx.url);
    const wild = await hook('fan', '/wild', { topics: ['order.*'] }, rx.url);
    const big = await hook('fan', '/big', { topics: ['order.paid'], filter: { data: { amount: { $gte: 100 } } } }, rx.url);
    const p1 = await publish({ tenant_id: 'fan', topic: 'user.created', data: { n: 1 } });
    t.same([...p1.destination_ids].sort(), [all, users].sort(), 'publish names the matching destinations');
    const p2 = await publish({ tenant_id: 'fan', topic: 'order.paid', data: { amount: 150 } });
    t.same([...p2.destination_ids].sort(), [all, big, wild].sort(), 'a wildcard subscription matches');
    await publish({ tenant_id: 'fan', topic: 'order.paid', data: { amount: 5 } });
    const p4 = await publish({ tenant_id: 'fan', topic: 'user.created', destination_id: users, data: { n: 4 } });
    t.same(p4.destination_ids, [users], 'destination_id targets one destination');
    await waitFor(
      'fan-out deliveries',
      () => at('/all').length === 3 && at('/users').length === 2 && at('/big').length === 1 && at('/wild').length === 2,
    );
    await new Promise((r) => setTimeout(r, 500));
    t.equal(at('/all').length, 3, 'catch-all got every event but the targeted one');
    t.equal(at('/users').length, 2, 'user topics only, plus the targeted event');
    t.equal(at('/big').length, 1, 'the filter let only amount >= 100 through');
    t.equal(at('/wild').length, 2, 'order.* got both order events and no user event');
    t.same(JSON.parse(at('/big')[0]?.body ?? '{}'), { amount: 150 });
  });

  t.test('read-your-write: an event is readable once publish answered; no attempt is listed without its event', async (t) => {
    await api('PUT', '/api/v1/tenants/ryw');
    const d = await hook('ryw', '/ryw', {}, rx.url);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      // Generated ids and caller-chosen ones; read back at once, from this gateway or the other.
      const p = await publish({ tenant_id: 'ryw', topic: 'user.created', data: { i }, ...(i % 2 ? { id: `ryw-${i}` } : {}) });
      ids.push(p.id);
      const r = await (i % 4 < 2 ? c1 : c2).api.GET('/api/v1/tenants/{tenant_id}/events/{event_id}', {
        params: { path: { tenant_id: 'ryw', event_id: p.id } },
      });
      t.equal(r.response.status, 200, `event ${i} readable right after its 202`);
      t.same(r.data?.data, { i });
      // Meanwhile, every attempt listed so far embeds its event.
      const listed = await ok(
        c1.api.GET('/api/v1/tenants/{tenant_id}/destinations/{destination_id}/attempts', {
          params: { path: { tenant_id: 'ryw', destination_id: d }, query: { include: 'event.data', limit: 100 } },
        }),
      );
      for (const a of listed.models) if (a.event?.id !== a.event_id) t.fail(`attempt of ${a.event_id} listed without its event`);
    }
    const all = await waitFor('every attempt', async () => {
      const page = await ok(
        c1.api.GET('/api/v1/tenants/{tenant_id}/destinations/{destination_id}/attempts', {
          params: { path: { tenant_id: 'ryw', destination_id: d }, query: { include: 'event', limit: 100 } },
        }),
      );
      return page.models.length === ids.length ? page.models : undefined;
    });
    t.ok(
      all.every((a) => a.event?.id === a.event_id),
      'every attempt embeds its event',
    );
  });

  t.test('events near the 1 MiB body limit, several at once, reach every destination', async (t) => {
    // Kafka refuses a partition's record batch over its max.message.bytes (1 MiB unless the topic
    // says otherwise): three such events to one partition, fanned out twice, are several MiB.
    await api('PUT', '/api/v1/tenants/large');
    await hook('large', '/large-a', {}, rx.url);
    await hook('large', '/large-b', {}, rx.url);
    const pad = 'x'.repeat(900 * 1024);
    const published = await Promise.all([1, 2, 3].map((n) => publish({ tenant_id: 'large', topic: 'user.created', data: { n, pad } })));
    await waitFor('every large delivery', () => at('/large-a').length === 3 && at('/large-b').length === 3, 60_000);
    for (const r of [...at('/large-a'), ...at('/large-b')]) t.equal(JSON.parse(r.body).pad.length, pad.length, 'the whole event');
    for (const p of published) {
      const rows = await waitFor('both attempts stored', async () => {
        const a = await attemptsOf(p.id);
        return a.length === 2 ? a : null;
      });
      t.same(
        rows.map((a) => a.status),
        ['success', 'success'],
      );
    }
  });

  t.test('disabled destinations are recorded as skipped; routing follows changes at once, on every gateway', async (t) => {
    await api('PUT', '/api/v1/tenants/cfg');
    const d = await hook('cfg', '/cfg', { topics: ['user.created'] }, rx.url);
    await api('PUT', `/api/v1/tenants/cfg/destinations/${d}/disable`);
    // Published through the other gateway instance, right after the change answered.
    const skipped = await publish({ tenant_id: 'cfg', topic: 'user.created', data: { phase: 'disabled' } }, c2);
    if (db) {
      const row = await waitFor(
        'the skipped event stored',
        async () => (await db('events').where({ tenant_id: 'cfg', id: skipped.id }).first()) as Record<string, unknown> | undefined,
      );
      t.same(row.skipped_destination_ids, [d], 'the event records the skipped destination');
      t.same(row.matched_destination_ids, []);
      const delivery = await db('deliveries').where({ tenant_id: 'cfg', event_id: skipped.id, destination_id: d }).first();
      t.equal(delivery?.status, 'skipped');
    } else {
      const listed = await waitFor('the skipped event stored', async () => {
        const r = await api<{ models: Array<{ id: string; status?: string }> }>('GET', `/api/v1/tenants/cfg/destination/${d}/events`);
        return r.body.models.find((e) => e.id === skipped.id);
      });
      t.equal(listed.status, 'skipped', 'the event records the skipped delivery');
    }
    await api('PUT', `/api/v1/tenants/cfg/destinations/${d}/enable`);
    await publish({ tenant_id: 'cfg', topic: 'user.created', data: { phase: 'enabled' } }, c2);
    await api('PATCH', `/api/v1/tenants/cfg/destinations/${d}`, { config: { url: `${rx.url}/cfg-moved` } });
    await publish({ tenant_id: 'cfg', topic: 'user.created', data: { phase: 'moved' } }, c2);
    const phases = () => [...at('/cfg'), ...at('/cfg-moved')].map((r) => JSON.parse(r.body).phase as string);
    await waitFor('deliveries after the changes', () => phases().length === 2);
    await new Promise((r) => setTimeout(r, 500));
    t.same(phases().sort(), ['enabled', 'moved'], 'nothing delivered while disabled; each later event once');
    t.same(
      at('/cfg-moved')
        .map((r) => JSON.parse(r.body).phase)
        .includes('moved'),
      true,
      'the new URL is used for events published after the change',
    );
    // An event published before the change but routed after it may already use the new URL.
    const unmatched = await publish({ tenant_id: 'cfg', topic: 'order.refunded', data: {} });
    await api('DELETE', `/api/v1/tenants/cfg/destinations/${d}`);
    const afterDelete = await publish({ tenant_id: 'cfg', topic: 'user.created', data: { phase: 'deleted' } }, c2);
    if (db) {
      const stored = await waitFor('the unmatched event stored', async () =>
        db('events').where({ tenant_id: 'cfg', id: afterDelete.id }).first(),
      );
      t.same(stored.matched_destination_ids, [], 'a deleted destination gets nothing');
      const unmatchedRow = await waitFor('unmatched stored', async () =>
        db('events').where({ tenant_id: 'cfg', id: unmatched.id }).first(),
      );
      t.same(
        [unmatchedRow.matched_destination_ids, unmatchedRow.skipped_destination_ids],
        [[], []],
        'an event that matched nothing is recorded',
      );
    } else {
      for (const [id, what] of [
        [afterDelete.id, 'an event after the delete'],
        [unmatched.id, 'an event that matched nothing'],
      ] as const) {
        await waitFor(`${what} stored`, async () => (await api('GET', `/api/v1/tenants/cfg/events/${id}`)).status === 200);
        t.same((await api('GET', `/api/v1/tenants/cfg/events/${id}/deliveries`)).body, [], `${what} is recorded and delivered nowhere`);
      }
    }
  });

  t.test('retries until success, then exhaustion ends in a terminal attempt', async (t) => {
    await api('PUT', '/api/v1/tenants/retries');
    const flaky = await hook('retries', '/flaky', { topics: ['user.created'] }, rx.url);
    const deadSecret = `whsec_${Buffer.from('e2e-dead-destination-secret-0123').toString('base64')}`;
    const dead = await hook('retries', '/dead', { topics: ['user.deleted'], credentials: { secret: deadSecret } }, rx.url);
    let flakyCalls = 0;
    rx.respond((r) => {
      if (r.url === '/flaky') return ++flakyCalls <= 2 ? { status: 503, body: 'busy' } : { status: 200, body: '{"ok":true}' };
      if (r.url === '/dead') return { status: 500, body: 'down' };
      return { status: 200 };
    });
    const e1 = await publish({ tenant_id: 'retries', topic: 'user.created', data: { k: 'flaky' } });
    const e2 = await publish({ tenant_id: 'retries', topic: 'user.deleted', data: { k: 'dead' } });
    const ok = await waitFor(
      'three attempts ending in success',
      async () => {
        const a = await attemptsOf(e1.id);
        return a.some((x) => x.status === 'success') ? a : undefined;
      },
      30_000,
    );
    t.same(
      ok.map((a) => [a.attempt_number, a.status, a.code, a.final]),
      [
        [1, 'failed', '503', false],
        [2, 'failed', '503', false],
        [3, 'success', '200', true],
      ],
    );
    t.ok(ok.every((a) => a.destination_id === flaky));
    t.same(ok[2]?.response_data, { status: 200, body: { ok: true } }, 'the response is kept');
    const gone = await waitFor(
      'retries exhausted',
      async () => {
        const a = await attemptsOf(e2.id);
        return a.length >= 4 ? a : undefined;
      },
      30_000,
    );
    t.same(
      gone.map((a) => [a.attempt_number, a.final]),
      [
        [1, false],
        [2, false],
        [3, false],
        [4, true],
      ],
      'first attempt + 3 retries, the last terminal',
    );
    t.ok(gone.every((a) => a.destination_id === dead && a.status === 'failed'));
    await new Promise((r) => setTimeout(r, 1500));
    t.equal((await attemptsOf(e2.id)).length, 4, 'no attempt after the terminal one');

    t.test('manual retry adds the next attempt, marked manual; a disabled destination is refused', async (t) => {
      rx.respond(() => ({ status: 200 }));
      const r = await api('POST', '/api/v1/retry', { event_id: e2.id, destination_id: dead });
      t.equal(r.status, 202, JSON.stringify(r.body));
      t.same(r.body, { success: true });
      const manual = await waitFor('the manual attempt', async () => (await attemptsOf(e2.id)).find((a) => a.manual));
      t.match(manual, { attempt_number: 5, status: 'success', manual: true, final: true });
      // Routed deliveries and the manual one carry the destination's ciphertext as stored; each is
      // signed with the secret inside it.
      const toDead = at('/dead');
      t.equal(toDead.length, 5, 'four routed attempts and the manual one reached the receiver');
      for (const r of toDead) {
        const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, String(r.headers[h])]));
        t.ok(new Webhook(deadSecret).verify(r.body, headers), 'signed with the destination’s secret');
      }
      const firstForm = await api('POST', `/api/v1/retries/destination/${dead}/events/${e2.id}/retry`);
      t.equal(firstForm.status, 202, 'the first path form works too');
      const again = await waitFor('the second manual attempt', async () => (await attemptsOf(e2.id)).find((a) => a.attempt_number === 6));
      t.match(again, { manual: true, status: 'success' });
      // Right after publish's 202 the event may not be stored yet: the retry waits for it, as a GET does.
      const fresh = await api<{ id: string }>('POST', '/api/v1/publish', {
        tenant_id: 'retries',
        topic: 'user.created',
        data: { fresh: 1 },
      });
      t.equal(fresh.status, 202);
      const soon = await api('POST', '/api/v1/retry', { event_id: fresh.body.id, destination_id: dead });
      t.same([soon.status, soon.body], [202, { success: true }], 'retried at once after publish: found, not 404');
      await waitFor('its manual attempt', async () => (await attemptsOf(fresh.body.id)).some((a) => a.manual));
      await api('PUT', `/api/v1/tenants/retries/destinations/${dead}/disable`);
      const refused = await api<{ code: string }>('POST', '/api/v1/retry', { event_id: e2.id, destination_id: dead });
      t.equal(refused.status, 422);
      t.equal(refused.body.code, 'DESTINATION_DISABLED');
      t.equal((await api('POST', '/api/v1/retry', { event_id: 'nope', destination_id: dead })).status, 404);
    });
  });

  t.test('idempotent publish and batch publish', async (t) => {
    rx.respond(() => ({ status: 200 }));
    await api('PUT', '/api/v1/tenants/idem');
    await hook('idem', '/idem', {}, rx.url);
    const first = await publish({ tenant_id: 'idem', id: 'order-42', topic: 'order.paid', data: { n: 42 } });
    t.same([first.id, first.duplicate], ['order-42', false]);
    const second = await publish({ tenant_id: 'idem', id: 'order-42', topic: 'order.paid', data: { n: 42 } }, c2);
    t.same([second.id, second.duplicate], ['order-42', true], 'a repeat through another gateway is a duplicate');
    const batch = await api<{ results: Array<Record<string, unknown>> }>('POST', '/api/v1/publish/batch', {
      events: [
        { tenant_id: 'idem', topic: 'user.created', data: { b: 1 } },
        { tenant_id: 'idem', topic: 'nope', data: {} },
        { tenant_id: 'idem', id: 'order-42', topic: 'order.paid', data: { n: 42 } },
        { tenant_id: 'idem', topic: 'user.created', data: 'not an object' },
        { tenant_id: 'ghost', topic: 'user.created', data: {} },
      ],
    });
    t.equal(batch.status, 200);
    t.match(batch.body.results, [
      { status: 202, duplicate: false },
      { status: 422, code: 'VALIDATION_FAILED', problems: [{ path: 'body.events[1].topic' }] },
      { status: 202, duplicate: true, id: 'order-42' },
      { status: 422, code: 'VALIDATION_FAILED', problems: [{ path: 'body.events[3].data' }] },
      { status: 404, code: 'TENANT_NOT_FOUND' },
    ]);
    await waitFor('two deliveries', () => at('/idem').length === 2);
    await new Promise((r) => setTimeout(r, 1000));
    t.equal(at('/idem').filter((r) => r.headers['x-outpost-event-id'] === 'order-42').length, 1, 'the repeated id was delivered once');
    t.equal(at('/idem').length, 2);
  });

  // Direct publishing is a feature of Kafka deployments only: in embedded mode the log belongs to
  // the one service process and nothing else may write to it, so there is nothing to test there.
  if (!embedded)
    t.test('events written straight into Kafka: valid ones delivered, invalid ones dead-lettered with the reason', async (t) => {
      if (!bus || !producer) throw new Error('Kafka mode has a bus');
      await api('PUT', '/api/v1/tenants/direct');
      await hook('direct', '/direct', {}, rx.url);
      const dead: InRecord<unknown>[] = [];
      await bus.consume<unknown>({ groupId: 'e2e-dlq', topics: [TOPIC.deadLetter], keepRaw: true, handle: async (r) => void dead.push(r) });
      // Written as a producer writes them, in bytes no re-serialisation gives back (spacing, 1.0,
      // an escape); the last one passes the schema, which fills in defaults (eligible_for_retry) as
      // it checks, and is refused only afterwards.
      const invalid = [
        '{ "tenant_id": "direct", "topic": "user.created", "data": "nope" }',
        '{not json',
        '{"tenant_id":"nobody","topic":"user.created","data":{"n":1.0,"s":"\\u00e9"}}',
      ].map((x) => Buffer.from(x));
      const headers = { origin: 'direct-producer', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
      await producer.send(TOPIC.events, [
        { key: 'direct', value: { tenant_id: 'direct', topic: 'user.created', data: { via: 'kafka' } } },
        ...invalid.map((value) => ({ key: 'direct', value, headers })),
      ]);
      await waitFor('the valid direct event', () => at('/direct').length === 1);
      t.same(JSON.parse(at('/direct')[0]?.body ?? '{}'), { via: 'kafka' });
      await waitFor('three dead letters', () => dead.length === 3);
      const reasons = dead.map((d) => d.headers['x-dead-letter-reason'] ?? '');
      t.match(reasons[0], /schema: \/data must be object/);
      t.match(reasons[1], /invalid JSON/);
      t.match(reasons[2], /unknown tenant: nobody/);
      dead.forEach((d, i) => {
        t.ok(d.raw && Buffer.compare(d.raw, invalid[i] as Buffer) === 0, `dead letter ${i}: the original bytes, byte for byte`);
        t.equal(d.key, 'direct', `dead letter ${i}: the original key`);
        t.match(d.headers, headers, `dead letter ${i}: the original headers, beside the reason`);
      });
    });

  t.test('consecutive failures raise an operator event and auto-disable the destination', async (t) => {
    await api('PUT', '/api/v1/tenants/alert');
    const bad = await hook('alert', '/alert', { topics: ['order.refunded'] }, rx.url);
    rx.respond((r) => (r.url === '/alert' ? { status: 500 } : { status: 200 }));
    const fromBus: OperatorEvent[] = [];
    await bus?.consume<OperatorEvent>({
      groupId: 'e2e-ops',
      topics: [TOPIC.operatorEvents],
      handle: async (r) => void fromBus.push(r.value),
    });
    // Embedded mode: the operator events as the signed callback delivered them.
    const ops = () => (bus ? fromBus : callback.requests.map((r) => JSON.parse(r.body) as OperatorEvent));
    for (let i = 0; i < 5; i++) await publish({ tenant_id: 'alert', topic: 'order.refunded', eligible_for_retry: false, data: { i } });
    const disabled = await waitFor(
      'auto-disable',
      async () => {
        const d = await api<{ disabled_at: string | null }>('GET', `/api/v1/tenants/alert/destinations/${bad}`);
        return d.body.disabled_at ? d.body : undefined;
      },
      30_000,
    );
    t.ok(disabled.disabled_at, 'the destination was disabled');
    await waitFor('operator events', () => ops().filter((o) => o.destination_id === bad).length === 2);
    t.same(
      ops()
        .filter((o) => o.destination_id === bad)
        .map((o) => o.type),
      ['alert.consecutive_failure', 'destination.auto_disabled'],
    );
    t.match(
      ops().find((o) => o.destination_id === bad),
      { tenant_id: 'alert', data: { consecutive_failures: 5, threshold: 5 } },
    );
    const cb = await waitFor('the signed callback', () => callback.requests.length >= 2 && callback.requests);
    t.ok(
      cb.every((r) => r.url === '/operator' && String(r.headers['webhook-signature']).startsWith('v1,')),
      'callbacks are signed',
    );
  });

  t.test('an auto-disabled destination gets no more retries: they end canceled', async (t) => {
    await api('PUT', '/api/v1/tenants/alert2');
    const bad = await hook('alert2', '/alert2', { topics: ['order.refunded'] }, rx.url);
    rx.respond((r) => (r.url === '/alert' || r.url === '/alert2' ? { status: 500 } : { status: 200 }));
    // Retryable: without the disable, 5 events x 4 attempts would reach the destination.
    const events: string[] = [];
    for (let i = 0; i < 5; i++) events.push((await publish({ tenant_id: 'alert2', topic: 'order.refunded', data: { i } })).id);
    const all = await waitFor(
      'every event ends',
      async () => {
        const rows = await attemptRows({ destination_id: bad });
        return events.every((e) => rows.some((a) => a.event_id === e && a.final)) ? rows : undefined;
      },
      30_000,
    );
    const d = await api<{ disabled_at: string | null }>('GET', `/api/v1/tenants/alert2/destinations/${bad}`);
    t.ok(d.body.disabled_at, 'auto-disabled');
    // Ended without a request: stored canceled, listed failed (code ERR) with the reason.
    const canceled = all.filter((a) => a.response_data?.reason === 'destination_disabled');
    t.ok(
      canceled.every((a) => (a.status === 'canceled' && a.code === 'CANCELED') || (a.status === 'failed' && a.code === 'ERR')),
      'stored canceled; listed failed, code ERR',
    );
    t.ok(canceled.length >= 1, `${canceled.length} queued retries ended canceled`);
    t.same(new Set(canceled.map((a) => a.response_data?.reason)), new Set(['destination_disabled']), 'canceled: destination_disabled');
    const failed = all.filter((a) => a.status === 'failed' && !canceled.includes(a)).length;
    // Settled: nothing reaches the destination after its deliveries ended.
    await new Promise((r) => setTimeout(r, 2_500));
    t.equal(at('/alert2').length, failed, 'the destination got exactly the failed attempts, nothing after the disable');
    t.ok(failed < 20, `${failed} of 20 possible requests went out`);
  });

  t.test('a hanging destination does not slow a healthy one in the same partition', async (t) => {
    await api('PUT', '/api/v1/tenants/hang');
    const slow = await hook('hang', '/hang', { topics: ['user.deleted'] }, rx.url);
    await hook('hang', '/healthy', { topics: ['user.created'] }, rx.url);
    rx.respond((r) => (r.url === '/hang' ? { status: 200, delayMs: 10_000 } : { status: 200 }));
    // More hanging deliveries than the partition has slots: the excess is parked, not queued.
    for (let i = 0; i < 12; i++) await publish({ tenant_id: 'hang', topic: 'user.deleted', eligible_for_retry: false, data: { i } });
    const started = Date.now();
    for (let i = 0; i < 20; i++) await publish({ tenant_id: 'hang', topic: 'user.created', data: { i } });
    await waitFor('healthy deliveries', () => at('/healthy').length === 20, 30_000);
    const healthyDone = Date.now() - started;
    // Twelve hanging deliveries at two at a time would take 12 s of timeouts if they blocked the
    // partition; the bound leaves a busy host most of that.
    t.ok(healthyDone < 10_000, `healthy destination served in ${healthyDone} ms while the other hangs`);
    // Two time out together (DESTINATION_CONCURRENCY); from then on the destination is slow and gets
    // one probe at a time, its other deliveries parked for as long as it has been stalled.
    const timedOut = await waitFor(
      'timeouts recorded',
      async () => {
        const rows = await attemptRows({ destination_id: slow });
        return rows.length >= 3 ? rows : undefined;
      },
      30_000,
    );
    t.ok(
      timedOut.every((a) => a.status === 'failed' && a.code === 'ERR' && a.response_data?.reason === 'timeout'),
      'hanging attempts end as timeouts',
    );
    const hung = at('/hang').map((r) => r.at);
    const overlapping = (i: number) => hung.filter((x) => x >= (hung[i] as number) - 1900 && x <= (hung[i] as number)).length;
    t.equal(overlapping(2), 1, 'after its first timeouts the destination has one delivery in flight, not two');
  });

  t.test('graceful shutdown: a sender stopped with SIGTERM finishes its in-flight work and commits', async (t) => {
    await api('PUT', '/api/v1/tenants/term');
    await hook('term', '/term', { topics: ['order.paid'] }, rx.url);
    rx.respond((r) => (r.url === '/term' ? { status: 200, delayMs: 300 } : { status: 200 }));
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await publish({ tenant_id: 'term', topic: 'order.paid', data: { i } })).id);
    await waitFor('deliveries under way', () => at('/term').length >= 2);
    const code = await sender.stop('SIGTERM');
    t.equal(code, 0, 'the sender exits cleanly');
    sender = await startService(suite, 'sender', env);
    await waitFor(
      'every event delivered',
      () => new Set(at('/term').map((r) => r.headers['x-outpost-event-id'])).size === ids.length,
      30_000,
    );
    await new Promise((r) => setTimeout(r, 1000));
    t.equal(at('/term').length, ids.length, 'each event delivered exactly once across the restart');
  });

  t.test('a sender killed with SIGKILL mid-run: every accepted event still reaches a terminal attempt', async (t) => {
    await api('PUT', '/api/v1/tenants/crash');
    const d = await hook('crash', '/crash', { topics: ['order.paid'] }, rx.url);
    rx.respond((r) => (r.url === '/crash' ? { status: 200, delayMs: 30 } : { status: 200 }));
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push((await publish({ tenant_id: 'crash', topic: 'order.paid', data: { i } })).id);
    await waitFor('some deliveries before the crash', () => at('/crash').length >= 5);
    sender.child.kill('SIGKILL');
    await new Promise((r) => sender.child.once('exit', r));
    await startService(t, 'sender', env);
    const done = await waitFor(
      'a terminal attempt for every event',
      async () => {
        const finals = [...new Set((await attemptRows({ destination_id: d })).filter((a) => a.final).map((a) => a.event_id))];
        return finals.length === ids.length ? finals.map((event_id) => ({ event_id })) : undefined;
      },
      60_000,
    );
    t.same(done.map((r) => r.event_id).sort(), [...ids].sort(), 'nothing accepted was lost');
    const received = new Set(at('/crash').map((r) => r.headers['x-outpost-event-id']));
    t.equal(received.size, ids.length, 'every event reached the receiver');
  });

  // Stack mode only: embedded mode's log is the one process's own.
  if (bus)
    t.test('every record the pipeline wrote matches its topic schema (shared/schemas)', async (t) => {
      const ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
      addFormats.default(ajv);
      for (const f of readdirSync(join(ROOT, 'shared/schemas')))
        ajv.addSchema(JSON.parse(readFileSync(join(ROOT, 'shared/schemas', f), 'utf8')));
      // Not the events topic: it takes what producers write straight into it, invalid records
      // included (the dead-letter subtest writes some); the router checks each against
      // event.schema.json, and every event it routed is checked here inside its routed record.
      const withSchema = allTopics().filter((d) => d.schema && d !== TOPIC.events);
      const seen = new Map<string, number>();
      const problems: string[] = [];
      await bus.consume<unknown>({
        groupId: 'e2e-schemas',
        topics: withSchema,
        fromBeginning: true,
        handle: async (r) => {
          const def = withSchema.find((d) => r.topic === `${env.KAFKA_TOPIC_PREFIX}${d.name}`);
          if (!def?.schema) return;
          seen.set(def.name, (seen.get(def.name) ?? 0) + 1);
          const validate = ajv.getSchema(`https://switchyard.dev/schemas/${def.schema}`);
          if (!validate?.(r.value)) problems.push(`${def.name}@${r.offset}: ${ajv.errorsText(validate?.errors)}`);
        },
      });
      const written = [
        TOPIC.routed,
        TOPIC.deliveries.webhook,
        ...TOPIC.retries.slice(0, 1),
        TOPIC.attempts,
        TOPIC.operatorEvents,
        TOPIC.destinationChanges,
      ];
      const missing = () => written.filter((d) => !seen.get(d.name)).map((d) => d.name);
      await waitFor('records of every topic the suite wrote to', () => missing().length === 0, 30_000).catch(() => undefined);
      t.same(missing(), [], 'records read from every topic the suite wrote to');
      let total = -1;
      await waitFor('the topics read to their end', async () => {
        const now = [...seen.values()].reduce((a, b) => a + b, 0);
        const settled = now === total;
        total = now;
        await new Promise((r) => setTimeout(r, 500));
        return settled;
      });
      t.ok(total > 100, `${total} records checked (${[...seen].map(([k, v]) => `${k} ${v}`).join(', ')})`);
      t.same(problems.slice(0, 20), [], 'no record off its schema');
    });

  t.test('every answer the suite saw matches the served OpenAPI document', async (t) => {
    t.ok(c1.openapi.checked + c2.openapi.checked > 100, `${c1.openapi.checked + c2.openapi.checked} answers checked`);
    t.same([...c1.openapi.problems, ...c2.openapi.problems], []);
  });
});
