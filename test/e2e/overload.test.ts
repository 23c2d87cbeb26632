// The admission bound end to end: a receiver slower than the publisher, PUBLISH_MAX_BACKLOG set.
// Publishing is refused with 429 and Retry-After once the backlog crosses the bound, not before
// it; the receiver gets every accepted event (nothing accepted is lost, nothing refused is
// delivered); and publishing is admitted again once the backlog drains.
import t from 'tap';
import { startReceiver, startStack, waitFor } from '@switchyard/shared/testing/index.ts';

const BOUND = 20;

t.test('publishing is refused while the backlog is over PUBLISH_MAX_BACKLOG, and nothing accepted is lost', async (t) => {
  const { api } = await startStack(t, {
    TOPICS: 'order.paid',
    PUBLISH_MAX_BACKLOG: String(BOUND),
    // One delivery a second (a slow receiver, one at a time): the backlog grows. Never parked as stalled.
    DESTINATION_CONCURRENCY: '1',
    DESTINATION_STALL_MS: '600000',
  });
  const receiver = await startReceiver(t);
  receiver.respond(() => ({ status: 200, delayMs: 1000 }));
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await api<{ code?: string }>(method, `/api/v1${path}`, body);
    return { ...res, retryAfter: res.headers.get('retry-after') };
  };
  t.equal((await call('PUT', '/tenants/acme')).status, 201);
  const dest = await call('POST', '/tenants/acme/destinations', {
    type: 'webhook',
    topics: ['order.paid'],
    config: { url: `${receiver.url}/hook` },
  });
  t.equal(dest.status, 201);

  const accepted = new Set<string>();
  const refused = new Set<string>();
  let n = 0;
  const publish = async () => {
    const id = `e-${++n}`;
    const a = await call('POST', '/publish', { id, tenant_id: 'acme', topic: 'order.paid', data: { id } });
    (a.status === 202 ? accepted : refused).add(id);
    return { id, ...a };
  };
  // Ten at a time, so that publishing outpaces the receiver however slow this machine is.
  const refusal = await waitFor(
    'a publish refused by the bound',
    async () => {
      const round = await Promise.all(Array.from({ length: 10 }, publish));
      const odd = round.find((a) => a.status !== 202 && a.status !== 429);
      if (odd) throw new Error(`unexpected ${odd.status}: ${JSON.stringify(odd.body)}`);
      return round.find((a) => a.status === 429);
    },
    120_000,
  );
  // Not before the bound: an event the router has fanned out but not committed counts in both its
  // lag and the sender's for that moment, so the refusal may come with the bound just reached.
  t.ok(accepted.size >= BOUND, `${accepted.size} accepted before the first refusal (bound ${BOUND})`);
  t.equal(refusal.body.code, 'RATE_LIMITED');
  t.equal(refusal.retryAfter, '1');

  // The receiver catches up: publishing is admitted again, and every accepted event arrives.
  receiver.respond(() => ({ status: 200 }));
  await waitFor('publishing admitted once the backlog drained', async () => (await publish()).status === 202);
  const ids = () => new Set(receiver.requests.map((r) => JSON.parse(r.body).id as string));
  await waitFor('every accepted event delivered', async () => [...accepted].every((id) => ids().has(id)));
  t.notOk(
    [...refused].some((id) => ids().has(id)),
    `none of the ${refused.size} refused events delivered`,
  );
});
