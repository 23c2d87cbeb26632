// Deliveries follow their destination's current state, tenant deletion erases, cancel and replay:
// every service its own process on the real broker and Postgres; with SWITCHYARD_E2E_MODE=embedded
// (test/embedded/e2e-state.test.ts), one embedded process instead.
import t from 'tap';
import { createDb } from '@switchyard/shared/db/index.ts';
import { apiClient, e2eMode, metricSum, metricsUrl, startReceiver, startStack, waitFor } from '@switchyard/shared/testing/index.ts';

interface Attempt {
  event_id: string;
  destination_id: string;
  manual: boolean;
  status: string;
  code: string;
  attempt_number: number;
  final: boolean;
  response_data: Record<string, unknown> | null;
}

t.test('current state, tenant deletion, cancel and replay', async (t) => {
  const { env, base, api, sender } = await startStack(t, {
    TOPICS: 'user.created,order.paid',
    KAFKA_PARTITIONS: '2',
    // The first retry 6 s after a failure: the window in which the tests below see the first
    // attempt through the API and change the destination or cancel, before the retry. 2 s was too
    // short on a loaded host.
    RETRY_SCHEDULE: '6,2,2',
    DELIVERY_TIMEOUT_SECONDS: '2',
    // sqs has no sender here: its deliveries wait (the pending listing says why).
    SENDER_TYPES: 'webhook',
  });
  const rx = await startReceiver(t);
  const at = (path: string) => rx.requests.filter((r) => r.url === path);
  // Embedded mode: the database belongs to the one service process; the suite reads through the API.
  const db = e2eMode() === 'embedded' ? null : createDb({ url: env.DATABASE_URL as string, poolMax: 2 });
  t.teardown(() => db?.destroy());

  const attemptsOf = async (tenant: string, eventId: string) =>
    (await api<{ models: Attempt[] }>('GET', `/api/v1/tenants/${tenant}/attempts?event_id=${eventId}&dir=asc&limit=100`)).body.models;
  const hook = async (tenant: string, path: string) => {
    const r = await api<{ id: string }>('POST', `/api/v1/tenants/${tenant}/destinations`, {
      type: 'webhook',
      topics: '*',
      config: { url: `${rx.url}${path}` },
    });
    if (r.status !== 201) throw new Error(`create destination answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body.id;
  };
  const publish = async (tenant: string, data: Record<string, unknown>) => {
    const r = await api<{ id: string }>('POST', '/api/v1/publish', {
      tenant_id: tenant,
      topic: 'user.created',
      eligible_for_retry: true,
      data,
    });
    if (r.status !== 202) throw new Error(`publish answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body.id;
  };
  t.test('queued retries: a deleted or disabled destination gets nothing more; a new URL is used', async (t) => {
    await api('PUT', '/api/v1/tenants/now');
    const gone = await hook('now', '/gone');
    const off = await hook('now', '/off');
    const moved = await hook('now', '/old');
    rx.respond((r) => (r.url === '/new' ? { status: 200 } : { status: 503 }));
    const e = await publish('now', { n: 1 });
    for (const d of [gone, off, moved])
      await waitFor('first attempts', async () =>
        (await attemptsOf('now', e)).some((a) => a.destination_id === d && a.status === 'failed'),
      );
    t.equal((await api('DELETE', `/api/v1/tenants/now/destinations/${gone}`)).status, 200);
    // Created again under its id, elsewhere: another destination, which the old one's retry never reaches.
    const again = { id: gone, type: 'webhook', topics: '*', config: { url: `${rx.url}/new` } };
    t.equal((await api('POST', '/api/v1/tenants/now/destinations', again)).status, 201);
    t.equal((await api('PUT', `/api/v1/tenants/now/destinations/${off}/disable`)).status, 200);
    t.equal((await api('PATCH', `/api/v1/tenants/now/destinations/${moved}`, { config: { url: `${rx.url}/new` } })).status, 200);
    const all = await waitFor(
      'every delivery final',
      async () => {
        const a = await attemptsOf('now', e);
        return [gone, off, moved].every((d) => a.some((x) => x.destination_id === d && x.final)) ? a : undefined;
      },
      30_000,
    );
    const of = (d: string) =>
      all.filter((a) => a.destination_id === d).map((a) => [a.attempt_number, a.status, a.code, a.response_data?.reason ?? null]);
    t.same(of(gone), [
      [1, 'failed', '503', 'peer_error'],
      [2, 'failed', 'ERR', 'destination_deleted'],
    ]);
    t.same(of(off), [
      [1, 'failed', '503', 'peer_error'],
      [2, 'failed', 'ERR', 'destination_disabled'],
    ]);
    t.same(of(moved), [
      [1, 'failed', '503', 'peer_error'],
      [2, 'success', '200', null],
    ]);
    t.same(
      [at('/gone').length, at('/off').length, at('/old').length, at('/new').length],
      [1, 1, 1, 1],
      "the retry went to the new URL only, never to the deleted destination's successor",
    );
    const canceled = await api<{ models: Attempt[] }>('GET', `/api/v1/tenants/now/attempts?status=canceled`);
    t.same(
      canceled.body.models.map((a) => [a.status, a.code, a.response_data?.reason]).sort(),
      [
        ['failed', 'ERR', 'destination_deleted'],
        ['failed', 'ERR', 'destination_disabled'],
      ],
      'canceled attempts can be listed by status; each is failed, code ERR, with the reason',
    );
    const failed = await api<{ models: Attempt[] }>('GET', `/api/v1/tenants/now/attempts?status=failed`);
    t.equal(failed.body.models.length, 5, 'failed lists them too, beside the three that failed on a request');
    const manual = await api<{ code: string }>('POST', '/api/v1/retry', { event_id: e, destination_id: off });
    t.same([manual.status, manual.body.code], [422, 'DESTINATION_DISABLED'], 'a manual retry of a disabled destination stays refused');
  });

  t.test('deleting a tenant erases its data; created again under its id it starts empty', async (t) => {
    rx.respond(() => ({ status: 200 }));
    await api('PUT', '/api/v1/tenants/erase');
    await hook('erase', '/erase');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await api<{ id: string }>('POST', '/api/v1/publish', {
        tenant_id: 'erase',
        id: `order-${i}`,
        topic: 'order.paid',
        data: { i },
      });
      ids.push(r.body.id);
    }
    await waitFor('every attempt stored', async () => {
      const r = await api<{ models: Attempt[] }>('GET', '/api/v1/tenants/erase/attempts?limit=100');
      return r.body.models.filter((a) => a.status === 'success').length === ids.length;
    });
    t.equal((await api('DELETE', '/api/v1/tenants/erase')).status, 200);
    t.equal((await api('GET', '/api/v1/tenants/erase')).status, 404, 'the tenant is gone at once');
    t.equal((await api('GET', '/api/v1/tenants/erase/events')).status, 404, 'and so are its listings');
    if (db) {
      const left = async () => {
        let n = 0;
        for (const table of ['events', 'deliveries', 'attempts', 'event_ids'])
          n += Number((await db(table).where({ tenant_id: 'erase' }).count<{ n: string }[]>({ n: '*' }))[0]?.n);
        return n;
      };
      await waitFor('the background erasure', async () => (await left()) === 0, 30_000);
      t.pass('no event, delivery, attempt or idempotency key of the tenant is left');
    }
    t.equal((await api('PUT', '/api/v1/tenants/erase')).status, 201, 'created again');
    const events = await api<{ models: unknown[] }>('GET', '/api/v1/tenants/erase/events');
    const attempts = await api<{ models: unknown[] }>('GET', '/api/v1/tenants/erase/attempts');
    t.same([events.status, events.body.models, attempts.body.models], [200, [], []], 'the new tenant starts empty');
    t.equal((await api<{ destinations_count: number }>('GET', '/api/v1/tenants/erase')).body.destinations_count, 0);
    const again = await api<{ duplicate: boolean }>('POST', '/api/v1/publish', {
      tenant_id: 'erase',
      id: 'order-0',
      topic: 'order.paid',
      data: {},
    });
    t.same([again.status, again.body.duplicate], [202, false], 'an event id of the old tenant is not a duplicate');
  });

  t.test('cancel: what is pending for a destination ends canceled; later deliveries go out', async (t) => {
    await api('PUT', '/api/v1/tenants/cancel');
    const d = await hook('cancel', '/cancel');
    rx.respond((r) => (r.url === '/cancel' ? { status: 503 } : { status: 200 }));
    const ids = [await publish('cancel', { n: 1 }), await publish('cancel', { n: 2 }), await publish('cancel', { n: 3 })];
    for (const id of ids) await waitFor('first attempts', async () => (await attemptsOf('cancel', id)).some((a) => a.status === 'failed'));
    const r = await api('POST', `/api/v1/tenants/cancel/destinations/${d}/cancel`);
    t.same([r.status, r.body], [202, { success: true }]);
    for (const id of ids) {
      const a = await waitFor('the canceled attempt', async () => {
        const list = await attemptsOf('cancel', id);
        return list.some((x) => x.final) ? list : undefined;
      });
      t.same(
        a.map((x) => [x.attempt_number, x.status, x.response_data?.reason ?? null]),
        [
          [1, 'failed', 'peer_error'],
          [2, 'failed', 'canceled'],
        ],
      );
    }
    t.equal(at('/cancel').length, 3, 'no retry went out');
    rx.respond(() => ({ status: 200 }));
    const later = await publish('cancel', { n: 4 });
    const ok = await waitFor('a later event delivered', async () =>
      (await attemptsOf('cancel', later)).find((a) => a.status === 'success'),
    );
    t.equal(ok.attempt_number, 1);
    t.equal((await api('POST', '/api/v1/tenants/cancel/destinations/nope/cancel')).status, 404);
  });

  t.test('replay since a time: exactly the failed deliveries, paged; a tenant token for its own only', async (t) => {
    await api('PUT', '/api/v1/tenants/replays');
    await api('PUT', '/api/v1/tenants/other');
    const bad = await hook('replays', '/bad');
    const good = await hook('replays', '/good');
    rx.respond((r) => (r.url === '/bad' ? { status: 500 } : { status: 200 }));
    const once = async (data: Record<string, unknown>) => {
      const r = await api<{ id: string }>('POST', '/api/v1/publish', {
        tenant_id: 'replays',
        topic: 'order.paid',
        eligible_for_retry: false,
        data,
      });
      return r.body.id;
    };
    const before = await once({ n: 0 });
    await waitFor('the earlier event attempted', async () => (await attemptsOf('replays', before)).length === 2);
    await new Promise((r) => setTimeout(r, 50));
    const since = new Date().toISOString();
    const ids = [await once({ n: 1 }), await once({ n: 2 }), await once({ n: 3 })];
    for (const id of ids) await waitFor('both attempts', async () => (await attemptsOf('replays', id)).length === 2);
    const token = (await api<{ token: string }>('GET', '/api/v1/tenants/replays/token')).body.token;
    const otherToken = (await api<{ token: string }>('GET', '/api/v1/tenants/other/token')).body.token;
    const tenant = apiClient(base, token);
    const other = apiClient(base, otherToken);
    t.equal((await other('POST', '/api/v1/tenants/replays/replay', { since })).status, 403, "another tenant's token may not replay");
    t.equal((await other('POST', `/api/v1/tenants/replays/destinations/${bad}/cancel`)).status, 403, 'nor cancel');
    t.same(
      (await other<{ replayed: number }>('POST', '/api/v1/replay', { since })).body.replayed,
      0,
      'its own replay finds nothing of ours',
    );
    t.equal((await tenant('POST', '/api/v1/replay', { since: 'yesterday' })).status, 422);
    rx.respond(() => ({ status: 200 }));
    const first = await tenant<{ replayed: number; not_replayed: number; next: string | null }>('POST', '/api/v1/replay', {
      since,
      limit: 2,
    });
    t.equal(first.status, 202, JSON.stringify(first.body));
    t.match(first.body, { replayed: 2, not_replayed: 0, next: String });
    const second = await tenant<{ replayed: number; next: string | null }>('POST', '/api/v1/replay', {
      since,
      limit: 2,
      cursor: first.body.next,
    });
    t.same(second.body, { replayed: 1, not_replayed: 0, next: null }, 'the second page ends it');
    // A cursor it never wrote, of a day that does not exist or an id Postgres cannot hold: 422.
    for (const forged of [
      ['2026-02-30T00:00:00.000Z', 'e', 'd'],
      ['2026-01-01T00:00:00.000Z', 'e\u0000', 'd'],
    ]) {
      const r = await tenant('POST', '/api/v1/replay', { since, cursor: Buffer.from(JSON.stringify(forged)).toString('base64url') });
      t.equal(r.status, 422, `forged cursor ${JSON.stringify(forged)}`);
    }
    for (const id of ids) {
      const m = await waitFor('the replayed attempt', async () => (await attemptsOf('replays', id)).find((a) => a.attempt_number === 2));
      t.match(m, { destination_id: bad, status: 'success', final: true });
    }
    await new Promise((r) => setTimeout(r, 500));
    t.equal(at('/bad').length, 7, 'the earlier event once, the three since the time twice');
    t.equal(at('/good').length, 4, 'successful deliveries are not replayed');
    const none = await tenant<{ replayed: number }>('POST', `/api/v1/tenants/replays/replay`, { since, destination_id: bad });
    t.same(none.body, { replayed: 0, not_replayed: 0, next: null }, 'nothing failed is left');
    t.equal(
      (await tenant('POST', '/api/v1/replay', { since, destination_id: good, status: ['failed', 'skipped', 'canceled'] })).status,
      202,
    );
  });

  t.test('a manual retry while an automatic one waits: numbered after it; once one succeeds, no more', async (t) => {
    await api('PUT', '/api/v1/tenants/won');
    const won = await hook('won', '/won');
    const later = await hook('won', '/later');
    // Failures ask for 20 s (Retry-After): the manual retries below are made and stored long before
    // the automatic ones are due.
    let succeed = false;
    rx.respond((r) =>
      r.url === '/won' || r.url === '/later'
        ? succeed || (r.url === '/won' && at('/won').length > 1)
          ? { status: 200 }
          : { status: 503, headers: { 'retry-after': '20' } }
        : { status: 200 },
    );
    const e = await publish('won', { n: 1 });
    const firstFailed = async (d: string) => (await attemptsOf('won', e)).some((a) => a.destination_id === d && a.status === 'failed');
    for (const d of [won, later]) await waitFor('the first attempt failed', () => firstFailed(d));
    const scrape = async () => (await fetch(await metricsUrl(sender, base))).text();
    const superseded = async () => metricSum(await scrape(), 'switchyard_retries_superseded_total', { type: 'webhook' }) ?? 0;
    const before = await superseded();
    // /won: the manual retry succeeds. /later: it fails too, and the automatic retry then succeeds.
    for (const d of [won, later]) t.equal((await api('POST', '/api/v1/retry', { event_id: e, destination_id: d })).status, 202);
    const manualDone = async (d: string) => (await attemptsOf('won', e)).some((a) => a.destination_id === d && a.attempt_number === 2);
    for (const d of [won, later]) await waitFor('the manual attempt', () => manualDone(d));
    succeed = true;
    await waitFor('the waiting retry of /won superseded', async () => (await superseded()) > before, 60_000);
    const all = await waitFor(
      'the retry of /later made',
      async () => {
        const a = await attemptsOf('won', e);
        return a.some((x) => x.destination_id === later && x.status === 'success') ? a : undefined;
      },
      60_000,
    );
    const of = (d: string) => all.filter((a) => a.destination_id === d).map((a) => [a.attempt_number, a.manual, a.status]);
    t.same(
      of(won),
      [
        [1, false, 'failed'],
        [2, true, 'success'],
      ],
      'no attempt after the manual success',
    );
    t.same(
      of(later),
      [
        [1, false, 'failed'],
        [2, true, 'failed'],
        [3, false, 'success'],
      ],
      'the automatic retry numbered after the manual one',
    );
    t.equal(at('/won').length, 2, 'the receiver got no request for the superseded retry');
    t.equal(at('/later').length, 3);
  });

  t.test('two manual retries a moment apart take a number each', async (t) => {
    await api('PUT', '/api/v1/tenants/twice');
    const d = await hook('twice', '/twice');
    // Answers take a second: the second retry is read and numbered while the first is still in
    // flight, long before its attempt is stored.
    rx.respond((r) => (r.url === '/twice' ? { status: 503, delayMs: at('/twice').length > 1 ? 1000 : 0 } : { status: 200 }));
    const r = await api<{ id: string }>('POST', '/api/v1/publish', {
      tenant_id: 'twice',
      topic: 'user.created',
      eligible_for_retry: false,
      data: {},
    });
    const e = r.body.id;
    await waitFor('the first attempt failed', async () => (await attemptsOf('twice', e)).some((a) => a.status === 'failed'));
    for (let i = 0; i < 2; i++) t.equal((await api('POST', '/api/v1/retry', { event_id: e, destination_id: d })).status, 202);
    const all = await waitFor('both manual attempts', async () => {
      const a = await attemptsOf('twice', e);
      return a.length >= 3 ? a : undefined;
    });
    t.same(
      all.map((a) => [a.attempt_number, a.manual]).sort(([x], [y]) => Number(x) - Number(y)),
      [
        [1, false],
        [2, true],
        [3, true],
      ],
    );
    t.equal(at('/twice').length, 3);
  });

  t.test('a pending delivery of a type no sender runs says why it waits', async (t) => {
    await api('PUT', '/api/v1/tenants/waits');
    const created = await api<{ id: string }>('POST', '/api/v1/tenants/waits/destinations', {
      type: 'sqs',
      topics: '*',
      config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' },
      credentials: { key: 'AKIAEXAMPLE', secret: 'sqs-secret-value-123' },
    });
    const web = await hook('waits', '/waits');
    const id = await publish('waits', { n: 1 });
    type Listed = { models: Array<{ id: string; status?: string; pending_reason?: { code: string; message: string } }> };
    const listed = await waitFor('the event stored', async () => {
      const r = await api<Listed>('GET', `/api/v1/tenants/waits/destination/${created.body.id}/events`);
      return r.body.models.find((e) => e.id === id);
    });
    t.equal(listed.status, 'pending');
    t.match(listed.pending_reason, { code: 'NO_SENDER', message: /No sender for sqs destinations is running/ });
    const one = await api<Listed['models']>('GET', `/api/v1/tenants/waits/destination/${created.body.id}/events/${id}`);
    t.equal(one.body[0]?.pending_reason?.code, 'NO_SENDER', 'the single event says so too');
    await waitFor('the webhook delivery', async () => (await attemptsOf('waits', id)).some((a) => a.status === 'success'));
    const delivered = await api<Listed>('GET', `/api/v1/tenants/waits/destination/${web}/events`);
    t.equal(delivered.body.models[0]?.pending_reason, undefined, 'a type with a sender has no such reason');
  });
});
