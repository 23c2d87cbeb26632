// The router's and the gateway's reads of destinations, and how a sender opens what they carry.
import t, { type Test } from 'tap';
import { createCipher } from '../src/crypto.ts';
import { createDb, migrateLatest } from '../src/db/index.ts';
import { DestinationStore, OPENED_MAX } from '../src/db/stores/destinations.ts';
import { destinationKey } from '../src/model/index.ts';
import { createTestDatabase } from '../src/testing/index.ts';

function must<T>(v: T | undefined): T {
  if (v === undefined) throw new Error('missing');
  return v;
}

/** A cipher that counts its work, around a real one. */
function countingCipher(secret: string) {
  const cipher = createCipher(secret);
  const n = { encrypt: 0, decrypt: 0 };
  return {
    n,
    cipher: {
      ...cipher,
      encrypt(v: string) {
        n.encrypt++;
        return cipher.encrypt(v);
      },
      decrypt(v: string) {
        n.decrypt++;
        return cipher.decrypt(v);
      },
    },
  };
}

/** A fresh database and a destination store whose cipher counts its work. */
async function setup(t: Test) {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 2 });
  t.teardown(() => db.destroy());
  await migrateLatest(db);
  const { cipher, n } = countingCipher('routing-secret-0123456789');
  return { db, store: new DestinationStore(db, cipher), n };
}

t.test('routableOf and routable: existing tenants only, one query, secrets passed on sealed as stored', async (t) => {
  const { db, store, n } = await setup(t);
  await db('tenants').insert([{ id: 'acme' }, { id: 'empty' }, { id: 'other' }]);
  for (const [tenant, id, disabled] of [
    ['acme', 'd1', false],
    ['acme', 'd2', true],
    ['other', 'd3', false],
  ] as const) {
    await store.create({
      id,
      tenant_id: tenant,
      type: 'webhook',
      topics: ['order.*'],
      config: { url: `https://example.com/${id}` },
      credentials: { secret: `whsec_${id}` },
      delivery_metadata: id === 'd1' ? { region: 'eu' } : null,
      metadata: { note: 'not routed' },
      filter: id === 'd1' ? { data: { total: { $gte: 10 } } } : null,
      ...(disabled ? { disabled_at: new Date().toISOString() } : {}),
    });
  }
  const stored = await db('destinations').where({ id: 'd1' }).first('credentials', 'delivery_metadata', 'created_at');
  n.encrypt = n.decrypt = 0;
  const queries: string[] = [];
  db.on('query', (q: { sql: string }) => queries.push(q.sql));

  const got = await store.routableOf(['acme', 'empty', 'nobody']);
  t.equal(queries.length, 1, 'one query for existence and destinations together');
  t.same([...got.keys()].sort(), ['acme', 'empty'], 'a tenant that does not exist is not in the map');
  t.same(got.get('empty'), [], 'a tenant without destinations has none');
  const acme = must(got.get('acme'));
  t.same(
    acme.map((d) => d.id),
    ['d1', 'd2'],
    'in creation order, disabled ones too (the router reports them skipped)',
  );
  t.same(acme[0], {
    id: 'd1',
    topics: ['order.*'],
    filter: { data: { total: { $gte: 10 } } },
    disabled_at: null,
    snapshot: {
      id: 'd1',
      tenant_id: 'acme',
      type: 'webhook',
      config: { url: 'https://example.com/d1' },
      credentials: stored.credentials,
      delivery_metadata: stored.delivery_metadata,
      // Which destination of this id: one created again under it has another (the sender tells them apart).
      created_at: stored.created_at.toISOString(),
    },
  });
  t.ok(must(acme[1]).disabled_at, 'the disabled one says so');
  t.equal(must(acme[1]).snapshot.delivery_metadata, null, 'no delivery_metadata stays null');
  t.same(await store.routable('acme', 'd1'), acme[0], 'one destination (a manual retry) reads the same');
  t.equal(await store.routable('other', 'd1'), null, 'not under another tenant');
  t.same(n, { encrypt: 0, decrypt: 0 }, 'nothing decrypted or re-encrypted');
  t.notMatch(JSON.stringify([...got]), /whsec_/, 'no secret in the clear');

  const routes = await store.routesOf(['acme', 'empty', 'nobody']);
  t.same([...routes.keys()].sort(), ['acme', 'empty']);
  t.same(Object.keys(must(must(routes.get('acme'))[0])).sort(), ['disabled_at', 'filter', 'id', 'topics'], 'routing columns only');
  t.same(await store.routableOf([]), new Map(), 'no tenants, no query');
});

t.test('openSnapshot: opens what the router passed on, once per ciphertext, and shares it frozen', async (t) => {
  const { db, store, n } = await setup(t);
  await db('tenants').insert({ id: 'acme' });
  const d = await store.create({
    id: 'd1',
    tenant_id: 'acme',
    type: 'webhook',
    topics: ['*'],
    config: { url: 'https://example.com/d1' },
    credentials: { secret: 'whsec_one' },
    delivery_metadata: { region: 'eu' },
    metadata: null,
    filter: null,
  });
  const snapshot = must(must((await store.routableOf(['acme'])).get('acme'))[0]).snapshot;
  n.decrypt = 0;
  const first = store.openSnapshot(snapshot);
  t.same(first, { credentials: { secret: 'whsec_one' }, delivery_metadata: { region: 'eu' } });
  t.equal(n.decrypt, 2, 'credentials and delivery_metadata decrypted once each');
  for (let i = 0; i < 5; i++) store.openSnapshot({ ...snapshot });
  t.equal(n.decrypt, 2, 'later deliveries of the same destination decrypt nothing');
  t.ok(Object.isFrozen(first.credentials), 'what deliveries share cannot be changed by one of them');
  t.throws(() => {
    (first.credentials as Record<string, unknown>).secret = 'changed';
  });

  await store.update('acme', d.id, { credentials: { secret: 'whsec_two' } });
  const changed = must(must((await store.routableOf(['acme'])).get('acme'))[0]).snapshot;
  t.not(changed.credentials, snapshot.credentials, 'a change of secrets is a new ciphertext');
  t.same(store.openSnapshot(changed).credentials, { secret: 'whsec_two' }, 'so the new secret is used at once');
  t.same(store.openSnapshot({ ...snapshot, credentials: null, delivery_metadata: null }), { credentials: {}, delivery_metadata: {} });
  t.throws(() => new DestinationStore(db, createCipher('another-key')).openSnapshot(changed), 'a wrong key still fails');
});

t.test('openSnapshot keeps at most OPENED_MAX opened secrets, dropping the oldest first', async (t) => {
  const { store, n } = await setup(t);
  const cipher = createCipher('routing-secret-0123456789');
  const snapshot = (i: number) => ({
    id: `d${i}`,
    tenant_id: 'acme',
    type: 'webhook' as const,
    config: {},
    credentials: cipher.encrypt(JSON.stringify({ secret: `s${i}` })),
    delivery_metadata: null,
  });
  const all = Array.from({ length: OPENED_MAX + 1 }, (_, i) => snapshot(i));
  n.decrypt = 0;
  for (const s of all) store.openSnapshot(s);
  t.equal(n.decrypt, OPENED_MAX + 1);
  store.openSnapshot(must(all[OPENED_MAX]));
  store.openSnapshot(must(all[1]));
  t.equal(n.decrypt, OPENED_MAX + 1, 'the newest ones are still kept');
  t.same(store.openSnapshot(must(all[0])).credentials, { secret: 's0' });
  t.equal(n.decrypt, OPENED_MAX + 2, 'the oldest was dropped, so it is opened again');
});

t.test(
  'deliverableOf: the destinations that still exist and are enabled, each its tenant’s (a sender closes the others’ clients)',
  async (t) => {
    const { db, store } = await setup(t);
    await db('tenants').insert([{ id: 'acme' }, { id: 'other' }]);
    for (const [tenant, id] of [
      ['acme', 'live'],
      ['acme', 'off'],
      ['acme', 'gone'],
      ['other', 'off'],
      ['other', 'gone'],
    ]) {
      await store.create({
        id: id as string,
        tenant_id: tenant as string,
        type: 'sqs',
        topics: ['*'],
        config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' },
        credentials: { key: 'k', secret: 's' },
        delivery_metadata: null,
        metadata: null,
        filter: null,
        ...(tenant === 'acme' && id === 'off' ? { disabled_at: new Date().toISOString() } : {}),
      });
    }
    await store.delete('acme', 'gone');
    const of = (tenant_id: string, ...ids: string[]) => ids.map((id) => ({ tenant_id, id }));
    t.same([...(await store.deliverableOf(of('acme', 'live', 'off', 'gone', 'never')))], [destinationKey('acme', 'live')]);
    t.same(
      [...(await store.deliverableOf([...of('acme', 'off', 'gone'), ...of('other', 'live')]))],
      [],
      'another tenant’s enabled or existing destination of the same id keeps none of acme’s',
    );
    t.same(
      [...(await store.deliverableOf(of('other', 'off', 'gone')))].sort(),
      [destinationKey('other', 'gone'), destinationKey('other', 'off')],
      'nor does acme’s disabled or deleted one drop another tenant’s',
    );
    t.same([...(await store.deliverableOf([]))], [], 'none asked, no query');
  },
);
