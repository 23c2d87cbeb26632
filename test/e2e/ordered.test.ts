// Ordered delivery end to end: a receiver failing one event mid-stream, twice, then accepting it (the
// later events wait behind it, then arrive in order); then failing another until its retries are
// exhausted, with a kill -9 of the sender while it blocks (the later events still wait, then arrive
// in order; the skipped one is failed). Every service its own process on the real broker and
// Postgres; with SWITCHYARD_E2E_MODE=embedded (test/embedded/e2e-ordered.test.ts), one embedded
// process instead (killed and started again).
import t from 'tap';
import { untilCount, waitFor } from '@switchyard/shared/testing/index.ts';
import { orderedPipeline } from './ordered-pipeline.ts';

interface Attempt {
  event_id: string;
  status: string;
  attempt_number: number;
  manual: boolean;
}

t.test('ordered destination: later events wait behind a failing one, in order, across a kill -9', async (t) => {
  const { api, rx, ordered, ids, nOf, arrivals, distinct, order, publish, killSender } = await orderedPipeline(t, 'ord', {
    KAFKA_PARTITIONS: '2',
    // Two retries, 3 s and 8 s after the failures before them (±10%): long enough to kill the sender meanwhile.
    RETRY_SCHEDULE: '3,8',
  });
  // n = 3 fails twice, then passes; n = 13 always fails.
  const tries = new Map<number, number>();
  rx.respond((r) => {
    if (r.url !== '/ordered') return { status: 200 };
    const n = nOf(r);
    const k = (tries.get(n) ?? 0) + 1;
    tries.set(n, k);
    return (n === 3 && k <= 2) || n === 13 ? { status: 503, body: 'not now' } : { status: 200 };
  });

  t.equal(ordered.ordered, true);
  const inOrder = (seq: number[]) => seq.every((n, i) => i === 0 || n >= (seq[i - 1] as number));

  // Success after two failures: 4..9 wait for 3.
  await publish(0, 10);
  await untilCount('the ordered destination, first ten', () => distinct('/ordered'), 10);
  const first = arrivals('/ordered');
  t.same(first, [0, 1, 2, 3, 3, 3, 4, 5, 6, 7, 8, 9], 'one at a time, in publish order; 4..9 only after 3 passed');
  await untilCount('the unordered destination', () => distinct('/free'), 10);

  // Exhaustion: 13 fails until its retries are exhausted; a kill -9 while it blocks.
  await publish(10, 20);
  const blocked = await waitFor(
    'the order endpoint naming the blocking event',
    async () => {
      const o = await order();
      return o.blocked?.event_id === ids.get(13) && (o.blocked?.waiting ?? 0) > 0 ? o : null;
    },
    120_000,
  );
  t.match(blocked, { ordered: true, blocked: { event_id: ids.get(13) } }, 'the blocking event');
  // Its first or second try (a loaded host may read the endpoint after the retry 3 s later); either
  // way the third and last is still to come, so the kill below lands while it blocks.
  t.ok([1, 2].includes(blocked.blocked?.attempt_number ?? 0), `blocked at attempt ${blocked.blocked?.attempt_number} of 3`);
  t.ok((blocked.blocked as { waiting: number }).waiting > 0, `deliveries wait behind it (${blocked.blocked?.waiting})`);
  t.notOk(
    arrivals('/ordered').some((n) => n > 13),
    'nothing after 13 arrived while it blocks',
  );
  // Embedded: the one process, killed and started again; otherwise the sender alone.
  await killSender();

  await untilCount('the ordered destination, all twenty', () => distinct('/ordered'), 20);
  const all = arrivals('/ordered');
  // At least once: a delivery made as the process died may come again, right after itself (a
  // receiver drops it by its webhook-id); no event is first delivered before an earlier one.
  const firsts = all.filter((n, i) => all.indexOf(n) === i);
  t.ok(inOrder(firsts), `first deliveries in publish order across the kill (${all.join(',')})`);
  // Embedded, the router dies too and routes its last events again; those repeats are skipped.
  t.ok(
    all.every((n, i) => i === 0 || n >= (all[i - 1] as number)),
    `no event again after a later one (${all.join(',')})`,
  );
  t.equal(all.filter((n) => n === 13).length >= 3, true, '13 was tried at least three times (the first attempt and two retries)');
  const lastOf13 = all.lastIndexOf(13);
  t.ok(
    all.slice(0, lastOf13).every((n) => n <= 13),
    '14..19 only after 13 was given up',
  );

  // The skipped event is visible as failed, its retries exhausted; the others succeeded.
  const attemptsOf = async (n: number) =>
    (await api<{ models: Attempt[] }>('GET', `/api/v1/tenants/ord/destinations/${ordered.id}/attempts?event_id=${ids.get(n)}&limit=100`))
      .body.models;
  const failed = await waitFor('the attempts of 13 stored', async () => {
    const a = await attemptsOf(13);
    return a.some((x) => x.attempt_number >= 3) ? a : null;
  });
  t.ok(
    failed.every((a) => a.status === 'failed'),
    'every attempt of 13 failed',
  );
  t.ok(
    failed.some((a) => a.attempt_number === 3),
    'its last retry recorded as attempt 3',
  );
  const three = await waitFor('the attempts of 3 stored', async () => {
    const a = await attemptsOf(3);
    return a.length >= 3 ? a : null;
  });
  t.same(three.map((a) => `${a.attempt_number}:${a.status}`).sort(), ['1:failed', '2:failed', '3:success'], 'one attempt per try of 3');
  t.same(await order(), { ordered: true, blocked: null, waiting: 0 }, 'nothing blocks it any more');

  // A manual retry of an old event is delivered again, out of order.
  const before = rx.requests.length;
  t.equal((await api('POST', `/api/v1/tenants/ord/destination/${ordered.id}/events/${ids.get(1)}/retry`)).status, 202);
  await waitFor('the manual retry delivered', () => rx.requests.slice(before).some((r) => r.url === '/ordered' && nOf(r) === 1));
  t.pass('the manual retry of event 1 arrived after 19');
});
