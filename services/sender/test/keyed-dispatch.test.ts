// The sender's keyed dispatch of delivery records, on the embedded log and Postgres, fed records as
// the router writes them. Tenants choose destination ids, and delivery records are keyed by the
// destination id alone (the key decides the partition); two tenants' destinations of one id are still
// two destinations to the sender: one's ordered pin, or its stall, holds up none of the other's
// deliveries. And a stall is a destination slow to answer: waiting for a rate-limit turn is not one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { metrics } from '@switchyard/shared/metrics.ts';
import type { RateLimit } from '@switchyard/shared/model/index.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { createTestDatabase, type Receiver, startReceiver, type Teardown, testConfig, waitFor } from '@switchyard/shared/testing/index.ts';
import { start } from '../src/service.ts';
import { deliveryRecord } from './records.ts';

/** How long a hanging destination takes to answer: longer than the test waits for the other tenant's. */
const HANG_MS = 8000;

/** A webhook sender on the embedded log and a database of its own, with `env`; its tenants and destinations made with `destination`. */
async function startSender(t: Teardown, env: Record<string, string>, tenants: string[]) {
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'keyed-dispatch-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = testConfig({
    KAFKA_BROKERS: '',
    DATABASE_URL: await createTestDatabase(t),
    DATA_DIR: dir,
    KAFKA_PARTITIONS: '1',
    SENDER_TYPES: 'webhook',
    DELIVERY_TIMEOUT_SECONDS: '15',
    ...env,
  });
  const rt = await createRuntime('sender-test', config, { embedded: true });
  t.teardown(() => rt.close());
  const receiver = await startReceiver(t);
  const store = new DestinationStore(rt.db, rt.cipher);
  await rt.db('tenants').insert(tenants.map((id) => ({ id })));
  const destination = (tenant: string, id: string, o: { ordered?: boolean; rate_limit?: RateLimit } = {}) =>
    store.create({
      id,
      tenant_id: tenant,
      type: 'webhook',
      topics: ['*'],
      config: { url: `${receiver.url}/${tenant}/${id}` },
      credentials: { secret: 'whsec_dGVzdC1zZWNyZXQtMDEyMzQ1Njc4OWFiY2RlZg==' },
      delivery_metadata: null,
      metadata: null,
      filter: null,
      ordered: o.ordered ?? false,
      ...(o.rate_limit ? { rate_limit: o.rate_limit } : {}),
    });
  const producer = await rt.bus.producer();
  t.teardown(() => producer.close());
  let n = 0;
  /** `count` first deliveries to `tenant`'s destination `id`, keyed as the router keys them: by the id alone. */
  const deliveries = async (tenant: string, id: string, count: number) => {
    const snapshot = (await store.routable(tenant, id))?.snapshot;
    if (!snapshot) throw new Error(`no destination ${tenant}/${id}`);
    const now = new Date().toISOString();
    return Array.from({ length: count }, () => {
      const event = { id: `evt_${++n}`, tenant_id: tenant, topic: 'user.created', time: now, received_at: now, data: { n } };
      return { key: id, value: deliveryRecord({ event, destination: snapshot }) };
    });
  };
  const begin = async () => {
    const service = await start(rt);
    t.teardown(() => service.close());
  };
  return { receiver, destination, deliveries, producer, begin };
}

const at = (receiver: Receiver, path: string) => receiver.requests.filter((r) => r.url === path).length;
const soon = (what: string, fn: () => boolean, ms: number) =>
  waitFor(what, fn, ms).then(
    () => true,
    () => false,
  );

t.test("one tenant's ordered or stalled destination holds up none of another tenant's of the same id", async (t) => {
  const { receiver, destination, deliveries, producer, begin } = await startSender(
    t,
    { DESTINATION_CONCURRENCY: '1', DESTINATION_STALL_MS: '300' },
    ['ta', 'tb', 'tc', 'td'],
  );
  // The first request to a hanging tenant's destination answers late; every other one at once.
  const hangs = new Set(['/ta/d', '/tc/e']);
  receiver.respond((r) => {
    const first = hangs.delete(r.url);
    return { status: 200, body: 'ok', delayMs: first ? HANG_MS : 0 };
  });
  // `d`: ta's is ordered, tb's is not; `e`: neither, and tc's hangs.
  await destination('ta', 'd', { ordered: true });
  await destination('tb', 'd');
  await destination('tc', 'e');
  await destination('td', 'e');
  await begin();
  const arrived = (path: string) => at(receiver, path);

  await t.test("an ordered destination's pin is its tenant's", async (t) => {
    await producer.send(TOPIC.deliveries.webhook, [...(await deliveries('ta', 'd', 2)), ...(await deliveries('tb', 'd', 3))]);
    t.ok(await soon("tb's deliveries", () => arrived('/tb/d') >= 3, HANG_MS - 2000), "tb's three arrived while ta's first hangs");
    t.equal(arrived('/ta/d'), 1, "ta's second waits for its first, in order");
    t.ok(await soon("ta's second", () => arrived('/ta/d') >= 2, HANG_MS + 10_000), "then ta's second");
  });

  await t.test("a stalled destination's parking is its tenant's", async (t) => {
    await producer.send(TOPIC.deliveries.webhook, await deliveries('tc', 'e', 1));
    await soon("tc's first", () => arrived('/tc/e') >= 1, 10_000);
    await new Promise((r) => setTimeout(r, 1000)); // past DESTINATION_STALL_MS: tc's `e` is stalled
    await producer.send(TOPIC.deliveries.webhook, [...(await deliveries('tc', 'e', 1)), ...(await deliveries('td', 'e', 3))]);
    t.ok(await soon("td's deliveries", () => arrived('/td/e') >= 3, HANG_MS - 3000), "td's three arrived, none parked, while tc's hangs");
    t.equal(arrived('/tc/e'), 1, "tc's second is parked meanwhile");
  });
});

t.test('a rate-limited destination that answers within the stall time is never stall-parked', async (t) => {
  // Turns 400 ms apart, two slots, answers in 450 ms: deliveries queue for a slot, and each waits up
  // to 400 ms for its turn in its slot first (held, or back from being parked for its turn). The
  // destination keeps up by the stall time (700 ms from its request), so none is parked as stalled.
  const { receiver, destination, deliveries, producer, begin } = await startSender(
    t,
    { DESTINATION_CONCURRENCY: '2', DESTINATION_STALL_MS: '700' },
    ['tr'],
  );
  receiver.respond(() => ({ status: 200, body: 'ok', delayMs: 450 }));
  await destination('tr', 'r', { rate_limit: { per_minute: 150 } });
  await begin();
  const parked = async () => (await metrics.parked.get()).values.reduce((sum, v) => sum + v.value, 0);
  const before = await parked();
  await producer.send(TOPIC.deliveries.webhook, await deliveries('tr', 'r', 12));
  await waitFor('twelve deliveries', () => at(receiver, '/tr/r') >= 12, 60_000);
  t.equal(at(receiver, '/tr/r'), 12, 'each delivered once');
  t.equal((await parked()) - before, 0, 'none parked as stalled');
});
