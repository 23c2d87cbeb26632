// The publish path's view of tenants and destinations: batched loads, no secrets, invalidation.
import t from 'tap';
import { createCipher } from '@switchyard/shared/crypto.ts';
import { createDb, migrateLatest } from '@switchyard/shared/db/index.ts';
import { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { createTestDatabase } from '@switchyard/shared/testing/index.ts';
import { RoutingCache } from '../src/routing-cache.ts';

t.test('routing cache: concurrent misses share one load, secrets stay sealed, invalidation is immediate', async (t) => {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 4 });
  t.teardown(() => db.destroy());
  await migrateLatest(db);
  let opened = 0;
  const cipher = createCipher('routing-cache-test-secret-0123456789');
  const counting = {
    ...cipher,
    decrypt(v: string) {
      opened++;
      return cipher.decrypt(v);
    },
  };
  const destinations = new DestinationStore(db, counting);
  for (const id of ['a', 'b', 'c']) {
    await db('tenants').insert({ id });
    await destinations.create({
      id: `d_${id}`,
      tenant_id: id,
      type: 'webhook',
      topics: ['*'],
      config: { url: 'https://example.com/hook' },
      credentials: { secret: `whsec_${id}` },
      delivery_metadata: { k: 'v' },
      metadata: null,
      filter: null,
    });
  }
  await db('tenants').insert({ id: 'empty' });
  opened = 0; // create() answers with the opened destination
  const cache = new RoutingCache(destinations, 60_000);
  const queries: string[] = [];
  db.on('query', (q: { sql: string }) => queries.push(q.sql));

  const got = await Promise.all(['a', 'b', 'c', 'nobody', 'a', 'empty'].map((id) => cache.get(id)));
  t.same(
    got.map((g) => [g.exists, g.destinations.map((d) => d.id)]),
    [
      [true, ['d_a']],
      [true, ['d_b']],
      [true, ['d_c']],
      [false, []],
      [true, ['d_a']],
      [true, []],
    ],
    'a tenant without destinations exists; one that is not there does not',
  );
  t.ok(queries.length <= 2, `six lookups, at most two loads of one query each (${queries.length} queries)`);
  t.equal(opened, 0, 'no credential or delivery_metadata was decrypted');
  t.same(Object.keys(got[0]?.destinations[0] ?? {}).sort(), ['disabled_at', 'filter', 'id', 'topics'], 'routing columns only');

  queries.length = 0;
  await cache.get('a');
  t.equal(queries.length, 0, 'a hit makes no query');

  await db('destinations').where({ id: 'd_a' }).update({ disabled_at: db.fn.now() });
  cache.invalidate('a');
  const after = await cache.get('a');
  t.ok(after.destinations[0]?.disabled_at, 'the change is seen at once after invalidate');
});
