// A blocked ordered destination holds up no other destination of its delivery partition: with one
// partition and four sender slots, an ordered destination whose receiver keeps failing gets ten
// times that many events while an unordered one of the same tenant (same partition) receives every
// one of them meanwhile; the ordered ones wait in the destination's spill, across a kill -9 of the
// sender, and arrive in publish order once the receiver recovers, none lost. Then an ordered
// destination with a rate limit: a backlog waits for its turns in the spill too, not in the
// partition's slots, and arrives in order at the limit. Every
// service its own process on the real broker and Postgres; with SWITCHYARD_E2E_MODE=embedded
// (test/embedded/e2e-ordered-spill.test.ts), one embedded process instead (killed and started again).
import t from 'tap';
import { maxInWindow, untilCount, waitFor } from '@switchyard/shared/testing/index.ts';
import { type Order, orderedPipeline } from './ordered-pipeline.ts';

const SLOTS = 4;

t.test('a blocked ordered destination spills its deliveries; its partition keeps delivering', async (t) => {
  const { api, rx, ids, arrivals, distinct, order, publish, killSender } = await orderedPipeline(t, 'spill', {
    // One delivery partition: both destinations share it, and its slots.
    KAFKA_PARTITIONS: '1',
    SENDER_CONCURRENCY: String(SLOTS),
    DESTINATION_CONCURRENCY: '2',
    // The blocking delivery is tried again 6 s after each failure, 5 times: it blocks for half a minute at least.
    RETRY_SCHEDULE: '6,6,6,6,6',
  });
  let failing = true;
  rx.respond((r) => (r.url === '/ordered' && failing ? { status: 500, body: 'down' } : { status: 200 }));

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
  await killSender();
  const more = first + 10;
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

  // An ordered destination limited to two a second: a backlog's turns stretch over seconds. Held in
  // the partition for them, its records would take the partition's slots, and the unordered
  // destination would get its last event only once all but about SLOTS of the limited one's were
  // made (12 of 16, measured); waiting in the spill, they leave the slots to the unordered one.
  const LIMIT = 2;
  const limited = await api<{ id: string }>('POST', '/api/v1/tenants/spill/destinations', {
    type: 'webhook',
    topics: '*',
    config: { url: `${rx.url}/limited` },
    ordered: true,
    rate_limit: { per_second: LIMIT },
  });
  t.equal(limited.status, 201, 'an ordered destination with a rate limit');
  const from = more + 1;
  const to = from + 16;
  await publish(from, to);
  await untilCount('the unordered destination, the backlog', () => distinct('/free'), to);
  const meanwhile = distinct('/limited');
  t.ok(
    meanwhile <= (to - from) / 2,
    `the unordered destination got all ${to - from} while the limited one had ${meanwhile}: no slot held for a turn`,
  );
  const waiting = (await api<Order>('GET', `/api/v1/tenants/spill/destinations/${limited.body.id}/order`)).body;
  t.ok(waiting.blocked === null && waiting.waiting > 0, `the backlog waits in the spill for its turns (${waiting.waiting})`);
  await untilCount('the limited destination, the backlog', () => distinct('/limited'), to - from);
  const backlog = arrivals('/limited');
  t.same(
    backlog.filter((n, i) => backlog.indexOf(n) === i),
    Array.from({ length: to - from }, (_, i) => from + i),
    `in publish order (${backlog.join(',')})`,
  );
  const times = rx.requests.filter((r) => r.url === '/limited').map((r) => r.at);
  t.ok(maxInWindow(times, 1000) <= LIMIT + 1, `at most ${LIMIT} + 1 in any second (saw ${maxInWindow(times, 1000)})`);
});
