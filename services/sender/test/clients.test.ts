// The client cache keeps one client per destination, and a destination is its tenant's: tenants
// choose ids, so two tenants' `default` are two destinations with a client each. (The cache against
// each type's real peer: conformance/suite.ts.)
import t from 'tap';
import { destinationKey, type EventRecord } from '@switchyard/shared/model/index.ts';
import { createClientCache, type DestinationRef } from '../src/clients.ts';
import { type DeliveryInput, succeeded, type Target, type TypeSender } from '../src/sender.ts';

/** A sender whose clients answer which tenant they were opened for; opened and closed clients counted. */
function fakeSender() {
  const opened: string[] = [];
  const closed: string[] = [];
  const sender: TypeSender = {
    open(target: Target) {
      const name = `${target.tenant_id}/${target.id} ${String(target.config.url)}`;
      opened.push(name);
      return {
        deliver: async () => succeeded({ body: name }),
        async close() {
          closed.push(name);
        },
      };
    },
    close: async () => {},
  };
  return { sender, opened, closed };
}

const event: EventRecord = {
  id: 'e1',
  tenant_id: 'a',
  topic: 'user.created',
  time: '2026-11-22T10:00:00.000Z',
  eligible_for_retry: true,
  metadata: null,
  data: {},
};

const input = (tenant: string, url: string): DeliveryInput => ({
  event: { ...event, tenant_id: tenant },
  destination: { id: 'default', tenant_id: tenant, type: 'webhook', config: { url }, credentials: null, delivery_metadata: null },
  credentials: {},
  deliveryMetadata: {},
  signal: AbortSignal.timeout(5000),
});

const bodyOf = (o: { response_data?: unknown }) => (o.response_data as { body?: string } | undefined)?.body;

t.test("two tenants' destinations of one id keep a client each, used by their own deliveries", async (t) => {
  const { sender, opened, closed } = fakeSender();
  const cache = createClientCache(sender);
  t.teardown(() => cache.close());
  const bodies: Array<string | undefined> = [];
  for (let i = 0; i < 3; i++) {
    bodies.push(bodyOf(await cache.deliver(input('a', 'http://a.example/hook'))));
    bodies.push(bodyOf(await cache.deliver(input('b', 'http://b.example/hook'))));
  }
  t.same(opened, ['a/default http://a.example/hook', 'b/default http://b.example/hook'], 'one client each, though they alternate');
  t.same(closed, [], 'neither retired by the other');
  t.same(
    bodies,
    ['a', 'b', 'a', 'b', 'a', 'b'].map((x) => `${x}/default http://${x}.example/hook`),
    'each through its own',
  );
  t.equal(cache.size, 2);
});

t.test('the same config under two tenants is still two clients', async (t) => {
  const { sender, opened } = fakeSender();
  const cache = createClientCache(sender);
  t.teardown(() => cache.close());
  t.equal(bodyOf(await cache.deliver(input('a', 'http://same.example/hook'))), 'a/default http://same.example/hook');
  t.equal(bodyOf(await cache.deliver(input('b', 'http://same.example/hook'))), 'b/default http://same.example/hook', "b's own client");
  t.equal(opened.length, 2);
});

t.test("forget and sweep close one tenant's client, never another's of the same id", async (t) => {
  const { sender, closed } = fakeSender();
  const cache = createClientCache(sender);
  t.teardown(() => cache.close());
  await cache.deliver(input('a', 'http://a.example/hook'));
  await cache.deliver(input('b', 'http://b.example/hook'));
  await cache.deliver(input('c', 'http://c.example/hook'));
  let asked: DestinationRef[] = [];
  // b's was deleted or disabled: only a's and c's are deliverable.
  await cache.sweep(async (destinations) => {
    asked = destinations;
    return new Set([destinationKey('a', 'default'), destinationKey('c', 'default')]);
  });
  t.same(
    asked.map((d) => `${d.tenant_id}/${d.id}`).sort(),
    ['a/default', 'b/default', 'c/default'],
    'the sweep asks about each cached destination, tenant and id',
  );
  t.same(closed, ['b/default http://b.example/hook'], "only b's client closed");
  cache.forget({ tenant_id: 'c', id: 'default' });
  await cache.sweep();
  t.same(closed, ['b/default http://b.example/hook', 'c/default http://c.example/hook'], "forgetting c's closes c's only");
  t.equal(cache.size, 1, "a's stays");
});
