// Read-your-write after publish: how long `GET /events/{id}` takes right after the 202,
// and whether it ever answers 404, against embedded mode (one process, as `npm start` runs it).
//   bash infra/run.sh node bench/read-your-write.ts [N]
// The gateway waits for an in-flight event (services/gateway/src/routes/events.ts), so the GET's
// latency is the time the event takes to reach the events table. Figures: docs/performance.md.
// Not a test, and not in the build.
process.env.SWITCHYARD_E2E_MODE = 'embedded';
const { apiClient, freePort, startReceiver, startService, testEnv } = await import('../shared/src/testing/index.ts');

const n = Number(process.argv[2] ?? 50);
const teardowns: Array<() => unknown> = [];
const t = { teardown: (fn: () => unknown) => teardowns.push(fn) };
try {
  const port = await freePort();
  const env = testEnv({ API_PORT: String(port), TOPICS: 'user.created' });
  await startService(t, 'gateway', env);
  const rx = await startReceiver(t);
  const api = apiClient(`http://127.0.0.1:${port}`, env.API_KEY as string);
  await api('PUT', '/api/v1/tenants/ryw');
  await api('POST', '/api/v1/tenants/ryw/destinations', { type: 'webhook', topics: '*', config: { url: `${rx.url}/h` } });
  const publishMs: number[] = [];
  const readMs: number[] = [];
  let notFound = 0;
  for (let i = 0; i < n; i++) {
    let t0 = performance.now();
    const p = await api<{ id: string }>('POST', '/api/v1/publish', { tenant_id: 'ryw', topic: 'user.created', data: { i } });
    publishMs.push(performance.now() - t0);
    t0 = performance.now();
    const r = await api('GET', `/api/v1/tenants/ryw/events/${p.body.id}`);
    readMs.push(performance.now() - t0);
    if (r.status !== 200) notFound++;
  }
  const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]?.toFixed(1);
  console.log(`${n} publishes, each read back at once (embedded mode)`);
  console.log(`  publish 202:         p50 ${pct(publishMs, 0.5)} ms  p95 ${pct(publishMs, 0.95)} ms`);
  console.log(`  GET /events/{id}:    p50 ${pct(readMs, 0.5)} ms  p95 ${pct(readMs, 0.95)} ms  max ${pct(readMs, 1)} ms`);
  console.log(`  answered other than 200: ${notFound}`);
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
