// Faults in stack mode: every service its own process on the real broker and Postgres, a run of
// events, bounded in count and time. The gateway, the router and the attempts service are killed
// with SIGKILL at random points; every accepted event must still reach a final attempt (reported:
// accepted without one, must be 0) and duplicates stay within the in-flight window (reported).
// Consumer groups growing and shrinking under load: test/faults/scaling.test.ts.
import t from 'tap';
import { duplicatesAt, publishAll, startFaultStack, startService, unfinished, waitFor } from '@switchyard/shared/testing/index.ts';

const random = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo));

t.test('SIGKILL of the gateway, the router and the attempts service at random points', async (t) => {
  const { env, db, procs, api, rx, kill } = await startFaultStack(t);
  await api('PUT', '/api/v1/tenants/kill');
  await api('POST', '/api/v1/tenants/kill/destinations', { type: 'webhook', topics: '*', config: { url: `${rx.url}/kill` } });
  const count = 1500;
  // Each at its own random point of the run; the restart happens while publishing goes on.
  const plan = new Map<number, 'router' | 'attempts' | 'gateway'>([
    [random(100, 400), 'router'],
    [random(500, 800), 'attempts'],
    [random(900, 1200), 'gateway'],
  ]);
  const restarts: Promise<void>[] = [];
  let resumedAfterMs = -1;
  const started = Date.now();
  const { accepted, refused } = await publishAll(api, 'kill', 'k', count, 8, (n) => {
    const name = plan.get(n);
    if (!name) return;
    plan.delete(n);
    const restart = (async () => {
      await kill(procs[name]);
      const at = Date.now();
      procs[name] = await startService(t, name, env);
      if (name === 'router') {
        // How soon deliveries flow again after the restarted router consumes: its partitions
        // were held by the killed member until the session timeout.
        const before = rx.requests.length;
        await waitFor('deliveries after the router restart', () => rx.requests.length > before, 60_000);
        resumedAfterMs = Date.now() - at;
      }
    })();
    restarts.push(restart);
    // The gateway's restart holds up publishing (nothing answers meanwhile); the others do not.
    return name === 'gateway' ? restart : undefined;
  });
  await Promise.all(restarts);
  const missing = await unfinished(db, 'kill', accepted, 90_000);
  const dup = duplicatesAt(rx, '/kill');
  t.comment(
    `SIGKILL run: ${accepted.size} accepted in ${Date.now() - started} ms; refused while down ${JSON.stringify(refused)}; ` +
      `accepted without a final attempt ${missing.length}; received ${dup.received}, duplicates ${dup.duplicates}; ` +
      `deliveries again ${resumedAfterMs} ms after the router was restarted (process start included)`,
  );
  t.equal(accepted.size, count);
  t.same(missing, [], 'every accepted event reached a final attempt');
  t.equal(dup.unique, count, 'every event reached the receiver');
  // The router routes again what it had not committed (a commit interval, 500 ms, of events), and
  // the sender delivers again what was in flight: far below the run.
  t.ok(dup.duplicates <= count * 0.25, `duplicates (${dup.duplicates}) within the in-flight window`);
});
