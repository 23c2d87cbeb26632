// A blocked ordered destination holds up no other destination of its delivery partition: with one
// partition and four sender slots, an ordered destination whose receiver keeps failing gets ten
// times that many events while an unordered one of the same tenant (same partition) receives every
// one of them meanwhile; the ordered ones wait in the destination's spill, across a kill -9 of the
// sender, and arrive in publish order once the receiver recovers, none lost. Every service its own
// process on the real broker and Postgres; with SWITCHYARD_E2E_MODE=embedded
// (test/embedded/e2e-ordered-spill.test.ts), one embedded process instead (killed and started again).
import t from 'tap';
import {
  apiClient,
  createTestDatabase,
  e2eMode,
  freePort,
  startReceiver,
  startService,
  testEnv,
  untilCount,
  waitFor,
} from '@switchyard/shared/testing/index.ts';

interface Order {
  ordered: boolean;
  blocked: { event_id: string; attempt_number: number; waiting: number } | null;
  waiting: number;
}

const SLOTS = 4;

t.test('a blocked ordered destination spills its deliveries; its partition keeps delivering', async (t) => {
  const port = await freePort();
  const env = testEnv({
    DATABASE_URL: await createTestDatabase(t),
    API_PORT: String(port),
    TOPICS: 'user.created',
    // One delivery partition: both destinations share it, and its slots.
    KAFKA_PARTITIONS: '1',
    SENDER_TYPES: 'webhook',
    SENDER_CONCURRENCY: String(SLOTS),
    DESTINATION_CONCURRENCY: '2',
    // The blocking delivery is tried again 6 s after each failure, 5 times: it blocks for half a minute at least.
    RETRY_SCHEDULE: '6,6,6,6,6',
  });
  const startAll = async () => {
    await startService(t, 'attempts', env);
    const [, sender] = await Promise.all([startService(t, 'router', env), startService(t, 'sender', env)]);
    await startService(t, 'gateway', env);
    return sender;
  };
  let sender = await startAll();
  const api = apiClient(`http://127.0.0.1:${port}`, env.API_KEY as string);
  const rx = await startReceiver(t);
  const nOf = (r: { body: string }) => (JSON.parse(r.body) as { n: number }).n;
  let failing = true;
  rx.respond((r) => (r.url === '/ordered' && failing ? { status: 500, body: 'down' } : { status: 200 }));

  await api('PUT', '/api/v1/tenants/spill');
  const create = async (path: string, extra: Record<string, unknown>) => {
    const r = await api<{ id: string }>('POST', '/api/v1/tenants/spill/destinations', {
      type: 'webhook',
      topics: '*',
      config: { url: `${rx.url}${path}` },
      ...extra,
    });
    if (r.status !== 201) throw new Error(`create destination answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const ordered = await create('/ordered', { ordered: true });
  await create('/free', {});
  const orderUrl = `/api/v1/tenants/spill/destinations/${ordered.id}/order`;
  const order = async () => (await api<Order>('GET', orderUrl)).body;

  const ids = new Map<number, string>();
  const publish = async (from: number, to: number) => {
    // One at a time, each accepted before the next: the events topic holds them in this order.
    for (let n = from; n < to; n++) {
      const r = await api<{ id: string }>('POST', '/api/v1/publish', { tenant_id: 'spill', topic: 'user.created', data: { n } });
      if (r.status !== 202) throw new Error(`publish answered ${r.status}`);
      ids.set(n, r.body.id);
    }
  };
  const arrivals = (path: string) => rx.requests.filter((r) => r.url === path).map(nOf);
  const distinct = (path: string) => new Set(arrivals(path)).size;

  // Ten times the partition's slots, all behind event 0, which keeps failing.
  const first = SLOTS * 10;
  await publish(0, first);
  await untilCount('the unordered destination on the same partition', () => distinct('/free'), first);
  t.same(
    [...new Set(arrivals('/ordered'))],
    [0],
    'every event reached the unordered destination while the ordered one was still blocked on event 0',
  );
  const spilled = await waitFor('all the later events in the spill', async () => {
    const o = await order();
    return o.blocked?.event_id === ids.get(0) && o.waiting === first - 1 ? o : null;
  });
  t.equal(spilled.blocked?.waiting, first - 1, 'the order endpoint counts them waiting behind the blocking one');

  // kill -9 while they are spilled; more events come while the sender is away and after.
  await sender.stop('SIGKILL');
  const more = first + 10;
  sender = e2eMode() === 'embedded' ? await startAll() : await startService(t, 'sender', env);
  await publish(first, more);
  await untilCount('the unordered destination after the restart', () => distinct('/free'), more);
  t.same([...new Set(arrivals('/ordered'))], [0], 'the ordered destination is still blocked on event 0 after the restart');
  await waitFor('the new events in the spill too', async () => ((await order()).waiting === more - 1 ? true : null));

  // The receiver recovers: everything, in publish order.
  failing = false;
  await untilCount('the ordered destination, everything', () => distinct('/ordered'), more);
  const all = arrivals('/ordered');
  const firsts = all.filter((n, i) => all.indexOf(n) === i);
  t.same(
    firsts,
    Array.from({ length: more }, (_, n) => n),
    `first deliveries in publish order, none lost (${all.join(',')})`,
  );
  t.ok(
    all.slice(0, all.lastIndexOf(0)).every((n) => n === 0),
    'nothing after event 0 before it passed',
  );
  t.same(
    await waitFor('the spill drained', async () => {
      const o = await order();
      return o.waiting === 0 && o.blocked === null ? o : null;
    }),
    { ordered: true, blocked: null, waiting: 0 },
    'nothing blocks it or waits any more',
  );

  // Straight from the partition again: a new event arrives, after all the others.
  await publish(more, more + 1);
  await waitFor('the next event delivered', () => arrivals('/ordered').includes(more));
  t.equal(arrivals('/ordered').at(-1), more, 'delivered last');
});
