// The Kafka broker restarted during publishing and delivery, in stack mode (every service its own
// process, the real Postgres): a publish is answered 202 only for a stored event (every accepted
// event is delivered once the broker is back) and otherwise 503 with Retry-After, never a 202 for
// an event that was not stored. The suite runs a broker of its own (the test command's is shared
// with the other suites), stopped and started again with infra/kafka/kafka.sh.
import t from 'tap';
import { createDb } from '@switchyard/shared/db/index.ts';
import { duplicatesAt, startOwnBroker, startReceiver, startStack, unfinished, waitFor } from '@switchyard/shared/testing/index.ts';

t.test('Kafka broker restart during a run', async (t) => {
  const { brokers, kafka } = await startOwnBroker(t, 'kafka-fault');
  const { env, base, attempts, router, sender, gateway } = await startStack(t, {
    KAFKA_BROKERS: brokers,
    TOPICS: 'order.paid',
    KAFKA_PARTITIONS: '2',
    RETRY_SCHEDULE: '1,1,1',
  });
  const services = [attempts, router, sender, gateway];
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${env.API_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  const rx = await startReceiver(t);
  await call('PUT', '/api/v1/tenants/kafka');
  await call('POST', '/api/v1/tenants/kafka/destinations', { type: 'webhook', topics: '*', config: { url: `${rx.url}/kafka` } });

  const accepted = new Set<string>();
  const answers: Record<string, number> = {};
  let retryAfterMissing = 0;
  let down = false;
  let refusedWhileDown = 0;
  let n = 0;
  let publishing = true;
  const publishers = Array.from({ length: 4 }, async () => {
    while (publishing) {
      const id = `k-${n++}`;
      for (;;) {
        const res = await call('POST', '/api/v1/publish', { tenant_id: 'kafka', id, topic: 'order.paid', data: { id } });
        await res.arrayBuffer();
        answers[res.status] = (answers[res.status] ?? 0) + 1;
        if (res.status === 202) {
          accepted.add(id);
          break;
        }
        if (res.status === 503 && down) refusedWhileDown++;
        if (res.status >= 500 && !res.headers.get('retry-after')) retryAfterMissing++;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  });

  await waitFor('sixty accepted', () => accepted.size >= 60, 60_000);
  down = true;
  kafka('stop');
  // Long enough for publishes to run out of the producer's retries while the broker is away.
  await waitFor('publishes refused while the broker is down', () => refusedWhileDown > 0, 60_000).catch(() => undefined);
  kafka('start');
  down = false;
  const total = accepted.size + 60;
  await waitFor('sixty more accepted', () => accepted.size >= total, 90_000);
  publishing = false;
  await Promise.all(publishers);

  const db = createDb({ url: env.DATABASE_URL as string, poolMax: 2 });
  t.teardown(() => db.destroy());
  const missing = await unfinished(db, 'kafka', accepted, 90_000);
  const ids = rx.requests.map((r) => String(r.headers['x-outpost-event-id']));
  const { received, duplicates } = duplicatesAt(rx, '/kafka');
  t.comment(
    `Kafka restart: ${accepted.size} accepted; answers ${JSON.stringify(answers)}, ${refusedWhileDown} refused (503) while down; ` +
      `accepted without a final attempt ${missing.length}; received ${received}, duplicates ${duplicates}`,
  );
  // On a loss, what the services logged of the lost events, and their errors other than the broker
  // being away: CI keeps no service logs.
  if (missing.length) {
    const told = (line: string) =>
      missing.slice(0, 3).some((id) => line.includes(`"${id}"`)) ||
      (/"level":"(error|fatal)"/.test(line) && !/ECONNREFUSED|No broker available|coordinator is loading/.test(line));
    for (const s of services)
      for (const line of s.output().split('\n').filter(told).slice(0, 20)) t.comment(`${s.name}: ${line.slice(0, 600)}`);
  }
  t.ok(refusedWhileDown > 0, 'publishes were answered 503 while the broker was down');
  t.equal(retryAfterMissing, 0, 'every 5xx carried Retry-After');
  t.same(missing, [], 'every event answered 202 was stored and reached a final attempt');
  t.ok(
    [...accepted].every((id) => ids.includes(id)),
    'every accepted event reached the receiver',
  );
});
