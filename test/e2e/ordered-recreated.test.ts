// An ordered destination deleted while a delivery blocks it, and created again under its id: the
// blocking delivery and the ones spilled behind it end canceled at once, not at the blocking one's
// next try (ten minutes away here), and the new destination's first event arrives meanwhile. Every
// service its own process on the real broker and Postgres; with SWITCHYARD_E2E_MODE=embedded
// (test/embedded/e2e-ordered-recreated.test.ts), one embedded process instead.
import t from 'tap';
import { waitFor } from '@switchyard/shared/testing/index.ts';
import { orderedPipeline } from './ordered-pipeline.ts';

interface Attempt {
  event_id: string;
  attempt_number: number;
  status: string;
  response_data: { reason?: string } | null;
}

t.test('a blocked ordered destination deleted and created again delivers at once', async (t) => {
  const { api, rx, ordered, ids, arrivals, order, publish } = await orderedPipeline(t, 'again', {
    KAFKA_PARTITIONS: '1',
    RETRY_SCHEDULE: '600',
  });
  rx.respond((r) => (r.url === '/ordered' ? { status: 500, body: 'down' } : { status: 200 }));
  await publish(0, 4);
  await waitFor('events 1 to 3 spilled behind event 0', async () => {
    const o = await order();
    return o.blocked?.event_id === ids.get(0) && o.waiting === 3 ? o : null;
  });

  t.equal((await api('DELETE', `/api/v1/tenants/again/destinations/${ordered.id}`)).status, 200);
  const again = await api('POST', '/api/v1/tenants/again/destinations', {
    id: ordered.id,
    type: 'webhook',
    topics: '*',
    ordered: true,
    config: { url: `${rx.url}/new` },
  });
  t.equal(again.status, 201);
  await publish(4, 5);
  await waitFor('event 4 at the new destination', () => arrivals('/new').includes(4));
  t.same(arrivals('/new'), [4], "none of the deleted destination's deliveries reach the new one");
  t.same(arrivals('/ordered'), [0], 'the blocked delivery was not tried again');

  const attemptsOf = async (n: number) =>
    (await api<{ models: Attempt[] }>('GET', `/api/v1/tenants/again/attempts?event_id=${ids.get(n)}&dir=asc`)).body.models;
  const last = await waitFor('every old delivery ended', async () => {
    const all = await Promise.all([0, 1, 2, 3].map(async (n) => (await attemptsOf(n)).at(-1)));
    return all.every((a) => a?.response_data?.reason === 'destination_deleted') ? all : null;
  });
  t.same(
    last.map((a) => [a?.attempt_number, a?.status, a?.response_data?.reason]),
    [
      [2, 'failed', 'destination_deleted'],
      [1, 'failed', 'destination_deleted'],
      [1, 'failed', 'destination_deleted'],
      [1, 'failed', 'destination_deleted'],
    ],
    'each ended canceled (failed, destination_deleted): the blocking one after its failed try, the spilled ones untried',
  );
  t.same(await order(), { ordered: true, blocked: null, waiting: 0 }, 'the new destination has no block');
});
