import t from 'tap';
import { createDb, migrateLatest } from '../src/db/index.ts';
import { EventIdStore } from '../src/db/stores/event-ids.ts';
import { createTestDatabase } from '../src/testing/index.ts';

t.test('event id reservations and claims', async (t) => {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 2 });
  t.teardown(() => db.destroy());
  await migrateLatest(db);
  const ids = new EventIdStore(db, 200);
  const k = (id: string) => ({ tenant_id: 'acme', id });

  t.same(await ids.reserve([k('a'), k('b'), k('a')]), ['new', 'new', 'in_flight'], 'a repeat within one batch races its original');
  t.same(await ids.reserve([k('a')]), ['in_flight'], 'pending: a repeat is told to retry');
  await ids.accept([k('a')]);
  t.same(await ids.reserve([k('a')]), ['duplicate'], 'accepted: a repeat is a duplicate');
  t.same(await ids.reserve([{ tenant_id: 'other', id: 'a' }]), ['new'], 'ids are per tenant');

  await new Promise((r) => setTimeout(r, 300));
  t.same(await ids.reserve([k('b')]), ['new'], 'a pending reservation abandoned past the stale time is taken over');
  await ids.release([k('b')]);
  t.same(await ids.reserve([k('b')]), ['new'], 'a released reservation can be made again');

  const claims = [
    { ...k('b'), partition: 0, offset: '10' },
    { ...k('c'), partition: 0, offset: '11' },
    { ...k('c'), partition: 0, offset: '12' },
  ];
  t.same([...(await ids.claim(claims))].sort(), [0, 1], 'first record of each id claims it; the repeat does not');
  t.same([...(await ids.claim(claims))].sort(), [0, 1], 'the claiming records may route again after a crash');
  t.same([...(await ids.claim([{ ...k('c'), partition: 1, offset: '3' }]))], [], 'another record carrying a claimed id is a duplicate');
  t.same(await ids.reserve([k('c')]), ['duplicate'], 'a claimed id is a duplicate at the gateway too');
});
