// Faults in stack mode: consumer groups grow to three instances of the router, the sender and the
// attempts service under load, then shrink by SIGTERM and SIGKILL; every accepted event must still
// reach a final attempt and duplicates stay within the in-flight window (both reported). SIGKILL at
// random points: test/faults/stack.test.ts.
import t from 'tap';
import {
  duplicatesAt,
  publishAll,
  type ServiceProcess,
  startFaultStack,
  startService,
  unfinished,
} from '@switchyard/shared/testing/index.ts';

t.test('consumer groups grow to three instances and shrink by SIGTERM and SIGKILL under load', async (t) => {
  const { env, db, procs, api, rx, kill } = await startFaultStack(t);
  await api('PUT', '/api/v1/tenants/scale');
  await api('POST', '/api/v1/tenants/scale/destinations', { type: 'webhook', topics: '*', config: { url: `${rx.url}/scale` } });
  const count = 1500;
  const groups = ['router', 'sender', 'attempts'] as const;
  const second: ServiceProcess[] = [];
  const third: ServiceProcess[] = [];
  const steps = new Map<number, () => Promise<void>>([
    [200, async () => void second.push(...(await Promise.all(groups.map((name) => startService(t, name, env)))))],
    [500, async () => void third.push(...(await Promise.all(groups.map((name) => startService(t, name, env)))))],
    // One instance of each group leaves gracefully, another dies; the third goes on alone.
    [900, async () => void (await Promise.all([...groups.map((name) => procs[name].stop('SIGTERM')), ...second.map(kill)]))],
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
