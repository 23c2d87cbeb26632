// Tenants choose destination ids, and delivery records are keyed by the destination id alone (the key
// decides the partition). Two tenants' destinations of one id are still two destinations to the
// sender: one's ordered pin, or its stall, holds up none of the other's deliveries. The sender on the
// embedded log and Postgres, fed delivery records as the router writes them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import type { DeliveryRecord } from '@switchyard/shared/model/index.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { createTestDatabase, startReceiver, testConfig, waitFor } from '@switchyard/shared/testing/index.ts';
import { start } from '../src/service.ts';

/** How long a hanging destination takes to answer: longer than the test waits for the other tenant's. */
const HANG_MS = 8000;

t.test("one tenant's ordered or stalled destination holds up none of another tenant's of the same id", async (t) => {
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'tenant-dispatch-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = testConfig({
    KAFKA_BROKERS: '',
    DATABASE_URL: await createTestDatabase(t),
    DATA_DIR: dir,
    KAFKA_PARTITIONS: '1',
    SENDER_TYPES: 'webhook',
    DELIVERY_TIMEOUT_SECONDS: '15',
    DESTINATION_CONCURRENCY: '1',
    DESTINATION_STALL_MS: '300',
  });
  const rt = await createRuntime('sender-test', config, { embedded: true });
  t.teardown(() => rt.close());
  const receiver = await startReceiver(t);
  // The first request to a hanging tenant's destination answers late; every other one at once.
  const hangs = new Set(['/ta/d', '/tc/e']);
  receiver.respond((r) => {
    const first = hangs.delete(r.url);
    return { status: 200, body: 'ok', delayMs: first ? HANG_MS : 0 };
  });
  const store = new DestinationStore(rt.db, rt.cipher);
  await rt.db('tenants').insert(['ta', 'tb', 'tc', 'td'].map((id) => ({ id })));
  const destination = (tenant: string, id: string, ordered: boolean) =>
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
      ordered,
    });
  // `d`: ta's is ordered, tb's is not; `e`: neither, and tc's hangs.
  await destination('ta', 'd', true);
  await destination('tb', 'd', false);
  await destination('tc', 'e', false);
  await destination('td', 'e', false);
  const service = await start(rt);
  t.teardown(() => service.close());
  const producer = await rt.bus.producer();
  t.teardown(() => producer.close());
  let n = 0;
  const deliveries = async (tenant: string, id: string, count: number) => {
    const snapshot = (await store.routable(tenant, id))?.snapshot;
    if (!snapshot) throw new Error(`no destination ${tenant}/${id}`);
    const now = new Date().toISOString();
    return Array.from({ length: count }, () => {
      const value: DeliveryRecord = {
        event: {
          id: `evt_${++n}`,
          tenant_id: tenant,
          topic: 'user.created',
          time: now,
          received_at: now,
          eligible_for_retry: true,
          metadata: null,
          data: { n },
        },
        destination: snapshot,
        attempt_number: 1,
        manual: false,
      };
      // Keyed as the router keys them: by the destination id alone.
      return { key: id, value };
    });
  };
  const at = (path: string) => receiver.requests.filter((r) => r.url === path).length;
  const soon = (what: string, fn: () => boolean, ms: number) =>
    waitFor(what, fn, ms).then(
      () => true,
      () => false,
    );

  await t.test("an ordered destination's pin is its tenant's", async (t) => {
    await producer.send(TOPIC.deliveries.webhook, [...(await deliveries('ta', 'd', 2)), ...(await deliveries('tb', 'd', 3))]);
    t.ok(await soon("tb's deliveries", () => at('/tb/d') >= 3, HANG_MS - 2000), "tb's three arrived while ta's first hangs");
    t.equal(at('/ta/d'), 1, "ta's second waits for its first, in order");
    t.ok(await soon("ta's second", () => at('/ta/d') >= 2, HANG_MS + 10_000), "then ta's second");
  });

  await t.test("a stalled destination's parking is its tenant's", async (t) => {
    await producer.send(TOPIC.deliveries.webhook, await deliveries('tc', 'e', 1));
    await soon("tc's first", () => at('/tc/e') >= 1, 10_000);
    await new Promise((r) => setTimeout(r, 1000)); // past DESTINATION_STALL_MS: tc's `e` is stalled
    await producer.send(TOPIC.deliveries.webhook, [...(await deliveries('tc', 'e', 1)), ...(await deliveries('td', 'e', 3))]);
    t.ok(await soon("td's deliveries", () => at('/td/e') >= 3, HANG_MS - 3000), "td's three arrived, none parked, while tc's hangs");
    t.equal(at('/tc/e'), 1, "tc's second is parked meanwhile");
  });
});
