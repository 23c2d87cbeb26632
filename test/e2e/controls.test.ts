// Delivery controls end to end: a rate-limited destination offered five times its limit. Every
// service its own process on the real broker and Postgres; with SWITCHYARD_E2E_MODE=embedded
// (test/embedded/e2e-controls.test.ts), one embedded process instead.
import t from 'tap';
import { maxInWindow, metricsUrl, startReceiver, startStack, untilCount, waitFor } from '@switchyard/shared/testing/index.ts';

/** Arrivals per one-second window, counted from the first of `times` (ms, sorted): only windows with one. */
function perWindow(times: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const at of times) {
    const w = Math.floor((at - (times[0] as number)) / 1000);
    out.set(w, (out.get(w) ?? 0) + 1);
  }
  return out;
}

/**
 * The least share of the limit a backlog drains at, per window used (docs/delivery-controls.md,
 * "Rate limits"): turns are 1100 / limit ms apart, and a burst leaves up to 0.7 s unused once.
 */
const DRAIN_SHARE = 0.75;

t.test('rate limit: five times the limit offered, the limit held, the other destination unaffected', async (t) => {
  const { api, base, sender } = await startStack(t, {
    TOPICS: 'user.created',
    KAFKA_PARTITIONS: '2',
    SENDER_TYPES: 'webhook',
  });
  const rx = await startReceiver(t);
  const LIMIT = 10;
  const SECONDS = 3;
  const N = LIMIT * 5 * SECONDS;

  await api('PUT', '/api/v1/tenants/rl');
  const create = async (path: string, extra: Record<string, unknown>) => {
    const r = await api<{ id: string; rate_limit?: unknown }>('POST', '/api/v1/tenants/rl/destinations', {
      type: 'webhook',
      topics: '*',
      config: { url: `${rx.url}${path}` },
      ...extra,
    });
    if (r.status !== 201) throw new Error(`create destination answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const limited = await create('/limited', { rate_limit: { per_second: LIMIT } });
  t.same(limited.rate_limit, { per_second: LIMIT });
  await create('/free', {});

  // Five times the limit, a batch a second.
  for (let s = 0; s < SECONDS; s++) {
    const events = Array.from({ length: LIMIT * 5 }, (_, i) => ({
      tenant_id: 'rl',
      topic: 'user.created',
      data: { n: s * LIMIT * 5 + i },
    }));
    const r = await api<{ results: Array<{ status: number }> }>('POST', '/api/v1/publish/batch', { events });
    t.equal(r.status, 200);
    t.ok(
      r.body.results.every((x) => x.status === 202),
      'every event accepted',
    );
    await new Promise((r) => setTimeout(r, 1000));
  }
  const at = (path: string) => rx.requests.filter((r) => r.url === path);
  const distinct = (path: string) => new Set(at(path).map((r) => (JSON.parse(r.body) as { n: number }).n)).size;

  await untilCount('the unlimited destination', () => distinct('/free'), N);
  t.equal(distinct('/free'), N, 'the other destination of the tenant got every event');
  await untilCount('the limited destination', () => distinct('/limited'), N);
  t.equal(distinct('/limited'), N, 'nothing lost: every event reached the limited destination');
  const times = at('/limited')
    .map((r) => r.at)
    .sort((a, b) => a - b);
  const span = ((times.at(-1) ?? 0) - (times[0] ?? 0)) / 1000;
  t.ok((times.length - 1) / span <= LIMIT, `on average at most ${LIMIT} a second (${((times.length - 1) / span).toFixed(2)})`);
  // The backlog drains at close to the limit: deliveries per one-second window used, measured at
  // the receiver (a window with none, the whole host stalled, is not counted; one of slow progress is).
  const windows = perWindow(times);
  t.comment(
    `limited destination: ${times.length} deliveries in ${windows.size} one-second windows (${[...windows.values()].join(' ')}), ${span.toFixed(1)} s`,
  );
  t.ok(
    times.length / windows.size >= DRAIN_SHARE * LIMIT,
    `the backlog drains at >= ${DRAIN_SHARE} of the limit (${(times.length / windows.size).toFixed(2)} a window)`,
  );
  t.ok(
    maxInWindow(
      at('/free').map((r) => r.at),
      1000,
    ) > LIMIT,
    'the unlimited destination is not held to it',
  );

  // Waiting is not an attempt: each event of the limited destination has one attempt, its first.
  type Listed = { attempt_number: number; status: string; time: string; duration_ms: number };
  let starts: number[] = [];
  await waitFor('the attempts of the limited destination stored', async () => {
    starts = [];
    let next: string | null = '';
    while (next !== null) {
      const page: { models: Listed[]; pagination: { next: string | null } } = (
        await api<{ models: Listed[]; pagination: { next: string | null } }>(
          'GET',
          `/api/v1/tenants/rl/attempts?destination_id=${limited.id}&limit=100${next ? `&next=${next}` : ''}`,
        )
      ).body;
      if (page.models.some((a) => a.attempt_number !== 1 || a.status !== 'success')) throw new Error('an attempt was not a first success');
      starts.push(...page.models.map((a) => Date.parse(a.time) - a.duration_ms));
      next = page.pagination.next;
    }
    return starts.length === N;
  });
  t.pass('one successful first attempt per event; waiting counted no attempt');
  // What the limit promises: the sender starts at most LIMIT deliveries in any one-second window
  // (an attempt starts its duration before its time), give or take one: a start is measured a few
  // steps after its turn. Arrivals at the receiver add the host's transit jitter, which a busy host
  // stretches past the limiter's 100 ms of slack: they are held to the limit on average above.
  const most = maxInWindow(starts, 1000);
  t.ok(most <= LIMIT + 1, `at most ${LIMIT} + 1 starts in any one-second window (saw ${most})`);

  // The sender's series: its own ops port, or the one process's /metrics (embedded mode).
  const metrics = await (await fetch(await metricsUrl(sender, base))).text();
  t.match(metrics, /switchyard_rate_limited_deliveries_total\{type="webhook",outcome="(waited|parked)"\} [1-9]/, 'waits are counted');

  // A removed limit frees what is parked for it: at 2 a minute the second delivery's turn is 30 s
  // after the first; parked in the 5 s tier, it goes at that tier's next release once the limit is gone.
  await api('PUT', '/api/v1/tenants/rl2');
  const slow = await api<{ id: string }>('POST', '/api/v1/tenants/rl2/destinations', {
    type: 'webhook',
    topics: '*',
    config: { url: `${rx.url}/slow` },
    rate_limit: { per_minute: 2 },
  });
  t.equal(slow.status, 201);
  for (const n of [1, 2])
    t.equal((await api('POST', '/api/v1/publish', { tenant_id: 'rl2', topic: 'user.created', data: { n } })).status, 202);
  await untilCount('the first delivery under 2 a minute', () => at('/slow').length, 1);
  const patched = await api('PATCH', `/api/v1/tenants/rl2/destinations/${slow.body.id}`, { rate_limit: null });
  t.equal(patched.status, 200, 'the limit removed');
  await untilCount('the second delivery, its limit removed', () => at('/slow').length, 2);
  const [first, second] = at('/slow').map((r) => r.at) as [number, number];
  t.ok(second - first < 25_000, `delivered ${((second - first) / 1000).toFixed(1)} s after the first, before its turn (30 s)`);

  // Scheduled events canceled before they were due take no turns: at 1 a second, ten canceled ones
  // due a second before a live one would put it 11 s back; it goes when due.
  await api('PUT', '/api/v1/tenants/rl3');
  const reminders = await api<{ id: string }>('POST', '/api/v1/tenants/rl3/destinations', {
    type: 'webhook',
    topics: '*',
    config: { url: `${rx.url}/reminders` },
    rate_limit: { per_second: 1 },
  });
  t.equal(reminders.status, 201);
  const schedule = async (n: number, delay_seconds: number) => {
    const r = await api<{ id: string; deliver_at: string }>('POST', '/api/v1/publish', {
      tenant_id: 'rl3',
      topic: 'user.created',
      data: { n },
      delay_seconds,
    });
    t.equal(r.status, 202);
    return r.body;
  };
  // Cancelable until a second before they are due: time for the events to be stored and canceled.
  const canceledIds = await Promise.all(Array.from({ length: 10 }, (_, i) => schedule(i, 6)));
  const live = await schedule(10, 7);
  for (const { id } of canceledIds)
    await waitFor(`${id} canceled`, async () => (await api('POST', `/api/v1/tenants/rl3/events/${id}/cancel`)).status === 200);
  await untilCount('the live reminder', () => at('/reminders').length, 1);
  const late = (at('/reminders')[0]?.at ?? 0) - Date.parse(live.deliver_at);
  t.same(
    at('/reminders').map((r) => (JSON.parse(r.body) as { n: number }).n),
    [10],
    'only the live one is sent',
  );
  // Behind ten canceled turns at one a second from 6 s, it would go at 16 s: 9 s late.
  t.ok(late < 7_000, `the live one ${(late / 1000).toFixed(1)} s after it was due, not behind ten canceled turns`);
});
