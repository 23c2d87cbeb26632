// Faults in stack mode: every service its own process on the real broker and Postgres, a run of
// events each, bounded in count and time. Processes are killed with SIGKILL at random points, and
// consumer groups grow and shrink under load; every accepted event must still reach a final attempt
// (reported: accepted without one, must be 0) and duplicates stay within the in-flight window
// (reported). The figures go to the test's comments.
import t from 'tap';
import { createDb } from '@switchyard/shared/db/index.ts';
import {
  apiClient,
  createTestDatabase,
  freePort,
  type Receiver,
  type ServiceProcess,
  startReceiver,
  startService,
  testEnv,
  waitFor,
} from '@switchyard/shared/testing/index.ts';

type Knex = ReturnType<typeof createDb>;

/**
 * Publishes `count` events with caller ids (so a publish that got no answer can be repeated without
 * a second event), `concurrency` at a time, repeating each until it is answered 202. Calls `at(n)`
 * after the n-th acceptance.
 */
async function publishAll(
  api: ReturnType<typeof apiClient>,
  tenant: string,
  prefix: string,
  count: number,
  concurrency: number,
  at: (accepted: number) => Promise<void> | void,
): Promise<{ accepted: Set<string>; refused: Record<string, number> }> {
  const accepted = new Set<string>();
  const refused: Record<string, number> = {};
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const id = `${prefix}-${next++}`;
      for (;;) {
        let status: number | string;
        try {
          status = (await api('POST', '/api/v1/publish', { tenant_id: tenant, id, topic: 'order.paid', data: { id } })).status;
        } catch (err) {
          status = (err as { cause?: { code?: string } }).cause?.code ?? 'network';
        }
        if (status === 202) break;
        refused[status] = (refused[status] ?? 0) + 1;
        await new Promise((r) => setTimeout(r, 200));
      }
      accepted.add(id);
      await at(accepted.size);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { accepted, refused };
}

/** Waits until every accepted event has a final attempt; returns those still without one at the deadline. */
async function unfinished(db: Knex, tenant: string, accepted: Set<string>, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let missing: string[] = [...accepted];
  while (Date.now() < deadline) {
    const rows = (await db('attempts').where({ tenant_id: tenant, final: true }).distinct('event_id')) as { event_id: string }[];
    const done = new Set(rows.map((r) => r.event_id));
    missing = [...accepted].filter((id) => !done.has(id));
    if (!missing.length) return [];
    await new Promise((r) => setTimeout(r, 500));
  }
  return missing;
}

function duplicatesAt(rx: Receiver, path: string): { received: number; unique: number; duplicates: number } {
  const ids = rx.requests.filter((r) => r.url === path).map((r) => String(r.headers['x-outpost-event-id']));
  const unique = new Set(ids).size;
  return { received: ids.length, unique, duplicates: ids.length - unique };
}

const random = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo));

t.test('stack faults', async (t) => {
  // Processes started inside a subtest live as long as the whole suite.
  const suite = t;
  const port = await freePort();
  const env = testEnv({
    DATABASE_URL: await createTestDatabase(t),
    API_PORT: String(port),
    TOPICS: 'order.paid',
    KAFKA_PARTITIONS: '4',
    RETRY_SCHEDULE: '1,1,1',
    DELIVERY_TIMEOUT_SECONDS: '2',
  });
  const db = createDb({ url: env.DATABASE_URL as string, poolMax: 2 });
  t.teardown(() => db.destroy());
  const procs: Record<string, ServiceProcess> = {};
  procs.attempts = await startService(t, 'attempts', env);
  [procs.router, procs.sender, procs.gateway] = await Promise.all([
    startService(t, 'router', env),
    startService(t, 'sender', env),
    startService(t, 'gateway', env),
  ]);
  const api = apiClient(`http://127.0.0.1:${port}`, env.API_KEY as string);
  const rx = await startReceiver(t);
  const kill = async (p: ServiceProcess) => {
    p.child.kill('SIGKILL');
    if (p.child.exitCode === null && p.child.signalCode === null) await new Promise((r) => p.child.once('exit', r));
  };

  t.test('SIGKILL of the gateway, the router and the attempts service at random points', async (t) => {
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
        await kill(procs[name] as ServiceProcess);
        const at = Date.now();
        procs[name] = await startService(suite, name, env);
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

  t.test('consumer groups grow to three instances and shrink by SIGTERM and SIGKILL under load', async (t) => {
    await api('PUT', '/api/v1/tenants/scale');
    await api('POST', '/api/v1/tenants/scale/destinations', { type: 'webhook', topics: '*', config: { url: `${rx.url}/scale` } });
    const count = 1500;
    const groups = ['router', 'sender', 'attempts'] as const;
    const second: ServiceProcess[] = [];
    const third: ServiceProcess[] = [];
    const steps = new Map<number, () => Promise<void>>([
      [200, async () => void second.push(...(await Promise.all(groups.map((name) => startService(suite, name, env)))))],
      [500, async () => void third.push(...(await Promise.all(groups.map((name) => startService(suite, name, env)))))],
      // One instance of each group leaves gracefully, another dies; the third goes on alone.
      [
        900,
        async () =>
          void (await Promise.all([...groups.map((name) => (procs[name] as ServiceProcess).stop('SIGTERM')), ...second.map(kill)])),
      ],
    ]);
    // One step after the other, each when its share of the run is accepted (or later).
    let running = Promise.resolve();
    const { accepted } = await publishAll(api, 'scale', 's', count, 8, (n) => {
      const step = steps.get(n);
      if (step) running = running.then(step);
    });
    await running;
    const extra = [...second, ...third];
    const missing = await unfinished(db, 'scale', accepted, 90_000);
    const dup = duplicatesAt(rx, '/scale');
    t.comment(
      `scaling run: ${accepted.size} accepted; accepted without a final attempt ${missing.length}; received ${dup.received}, duplicates ${dup.duplicates}`,
    );
    if (missing.length) {
      const stored = await db('deliveries').where({ tenant_id: 'scale' }).count<{ n: string }[]>({ n: '*' });
      t.comment(`deliveries stored ${stored[0]?.n}; first missing ${missing.slice(0, 3).join(', ')}`);
      for (const p of [...Object.values(procs), ...extra])
        t.comment(
          `${p.name} (exit ${p.child.exitCode ?? p.child.signalCode}):\n${p
            .output()
            .split('\n')
            .filter((l) => !/"msg":"attempt"/.test(l))
            .slice(-15)
            .join('\n')}`,
        );
    }
    t.same(missing, [], 'rebalances lost nothing');
    t.equal(dup.unique, count, 'every event reached the receiver');
    t.ok(dup.duplicates <= count * 0.25, `duplicates (${dup.duplicates}) within the in-flight window`);
  });
});
