// Deliveries follow their destination's current state, tenant deletion erases, cancel and replay:
// every service its own process on the real broker and Postgres; with SWITCHYARD_E2E_MODE=embedded
// (test/embedded/e2e-state.test.ts), one embedded process instead.
import t from 'tap';
import { createDb } from '@switchyard/shared/db/index.ts';
import {
  apiClient,
  createTestDatabase,
  e2eMode,
  freePort,
  startReceiver,
  startService,
  testEnv,
  waitFor,
} from '@switchyard/shared/testing/index.ts';

interface Attempt {
  event_id: string;
  destination_id: string;
  status: string;
  code: string;
  attempt_number: number;
  final: boolean;
  response_data: Record<string, unknown> | null;
}

t.test('current state, tenant deletion, cancel and replay', async (t) => {
  const port = await freePort();
  const env = testEnv({
    DATABASE_URL: await createTestDatabase(t),
    API_PORT: String(port),
    TOPICS: 'user.created,order.paid',
    KAFKA_PARTITIONS: '2',
    RETRY_SCHEDULE: '2,2,2',
    DELIVERY_TIMEOUT_SECONDS: '2',
  });
  await startService(t, 'attempts', env);
  await Promise.all([startService(t, 'router', env), startService(t, 'sender', env), startService(t, 'gateway', env)]);
  const api = apiClient(`http://127.0.0.1:${port}`, env.API_KEY as string);
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
      [1, 'failed', '503', null],
      [2, 'canceled', 'CANCELED', 'destination_deleted'],
    ]);
    t.same(of(off), [
      [1, 'failed', '503', null],
      [2, 'canceled', 'CANCELED', 'destination_disabled'],
    ]);
    t.same(of(moved), [
      [1, 'failed', '503', null],
      [2, 'success', '200', null],
    ]);
    t.same(
      [at('/gone').length, at('/off').length, at('/old').length, at('/new').length],
      [1, 1, 1, 1],
      'the retry went to the new URL only',
    );
    const canceled = await api<{ models: Attempt[] }>('GET', `/api/v1/tenants/now/attempts?status=canceled`);
    t.equal(canceled.body.models.length, 2, 'canceled attempts can be listed by status');
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
});
