// Keyset paging (shared/src/db/paging.ts): the cursor codec, the checks a route makes, and paginate()
// over a real table (operator events, through the operations store).
import t from 'tap';
import { createDb, migrateLatest } from '../src/db/index.ts';
import { cursorAt, decodeCursor, type ListPage, pageProblems } from '../src/db/paging.ts';
import { OperationsStore } from '../src/db/stores/operations.ts';
import { createTestDatabase } from '../src/testing/index.ts';

const TIME = '2026-01-02T03:04:05.123456Z';
const UUID = '0190a000-0000-7000-8000-000000000000';

t.test('a cursor belongs to one listing, one side and one direction', async (t) => {
  const c = cursorAt('op', 'asc', 'next', TIME, 'x1');
  t.match(decodeCursor(c, 'next', 'op'), { k: 'op', d: 'asc', t: TIME, i: 'x1', w: 'n' });
  t.equal(decodeCursor(c, 'next', 'ten'), undefined, "another listing's");
  t.equal(decodeCursor(c, 'prev', 'op'), undefined, 'given as prev');
  t.equal(decodeCursor('garbage', 'next', 'op'), undefined);
  t.equal(
    decodeCursor(cursorAt('op', 'asc', 'next', '2026-01-02 03:04:05+00', 'x1'), 'next', 'op'),
    undefined,
    'time not as keyText prints it',
  );
  t.equal(decodeCursor(cursorAt('att', 'asc', 'next', TIME, 'not-a-uuid'), 'next', 'att'), undefined, 'attempt ids are UUIDs');
  t.ok(decodeCursor(cursorAt('att', 'asc', 'next', TIME, UUID), 'next', 'att'));
  t.equal(decodeCursor(cursorAt('evt', 'asc', 'next', TIME, 'e1'), 'next', 'evt'), undefined, 'event cursors name the tenant');
  t.ok(decodeCursor(cursorAt('evt', 'asc', 'next', TIME, 'e1', 'acme'), 'next', 'evt'));
});

t.test('a cursor names a real instant, and text Postgres can hold', async (t) => {
  // Each of these reached Postgres before, which refused it: a 500 rather than the route's 422.
  for (const time of [
    '2026-13-45T06:28:26.395000Z',
    '2026-02-30T03:04:05.123456Z',
    '2026-04-31T03:04:05.123456Z',
    '2026-01-02T24:04:05.123456Z',
    '2026-01-02T03:60:05.123456Z',
    '2026-01-02T03:04:60.123456Z',
    '0000-01-02T03:04:05.123456Z',
  ]) {
    t.equal(decodeCursor(cursorAt('ten', 'asc', 'next', time, 'acme'), 'next', 'ten'), undefined, time);
    t.match(pageProblems({ limit: 10, next: cursorAt('evt', 'asc', 'next', time, 'e1', 'acme') }, 'evt'), [
      { path: 'query.next', message: /not a valid cursor/ },
    ]);
  }
  t.equal(decodeCursor(cursorAt('evt', 'asc', 'next', TIME, 'e1\u0000', 'acme'), 'next', 'evt'), undefined, 'NUL in the id');
  t.equal(decodeCursor(cursorAt('evt', 'asc', 'next', TIME, 'e1', 'ac\u0000me'), 'next', 'evt'), undefined, 'NUL in the tenant');
  t.equal(decodeCursor(cursorAt('ten', 'asc', 'next', TIME, '\u0000'), 'next', 'ten'), undefined, 'NUL as the id');
  t.match(pageProblems({ limit: 10, prev: cursorAt('op', 'asc', 'prev', TIME, 'x\u0000') }, 'op'), [
    { path: 'query.prev', message: /not a valid cursor/ },
  ]);
  for (const time of ['2024-02-29T23:59:59.999999Z', '0001-01-01T00:00:00.000000Z', '9999-12-31T23:59:59.999999Z'])
    t.ok(decodeCursor(cursorAt('ten', 'asc', 'next', time, 'acme'), 'next', 'ten'), `${time}: a real one`);
});

t.test('pageProblems: what a route answers 422 for', async (t) => {
  const next = cursorAt('ten', 'asc', 'next', TIME, 'acme');
  const page = (p: Partial<ListPage>): ListPage => ({ limit: 10, ...p });
  t.same(pageProblems(page({}), 'ten'), []);
  t.same(pageProblems(page({ next }), 'ten'), []);
  t.same(pageProblems(page({ next, dir: 'asc' }), 'ten'), []);
  t.match(pageProblems(page({ next, prev: next }), 'ten'), [{ path: 'query.next', message: /cannot be combined/ }]);
  t.match(pageProblems(page({ prev: next }), 'ten'), [{ path: 'query.prev', message: /not a valid cursor/ }]);
  t.match(pageProblems(page({ next }), 'op'), [{ path: 'query.next', message: /not a valid cursor/ }]);
  t.match(pageProblems(page({ next, dir: 'desc' }), 'ten'), [{ path: 'query.dir', message: /dir=asc/ }]);
});

t.test('paginate: forward, back and both ends over rows sharing a time', async (t) => {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 2 });
  t.teardown(() => db.destroy());
  await migrateLatest(db);
  // Microseconds apart, and two rows at the same instant: the id breaks the tie.
  const times = [
    '2026-01-01T00:00:00.000001Z',
    '2026-01-01T00:00:00.000002Z',
    '2026-01-01T00:00:00.000002Z',
    '2026-01-01T00:00:00.000003Z',
  ];
  await db('operator_events').insert(
    times.map((time, i) => ({ tenant_id: 'acme', id: `e${i}`, destination_id: 'd1', type: 'alert.consecutive_failure', time, data: {} })),
  );
  const store = new OperationsStore(db);
  const list = async (page: ListPage & { dir: 'asc' | 'desc' }) => {
    const r = await store.listEvents('acme', {}, page);
    return { ids: r.models.map((m) => m.id), next: r.pagination.next, prev: r.pagination.prev };
  };

  const p1 = await list({ limit: 3, dir: 'desc' });
  t.same(p1.ids, ['e3', 'e2', 'e1']);
  t.equal(p1.prev, null, 'no prev on the first page');
  const p2 = await list({ limit: 3, dir: 'desc', next: p1.next ?? undefined });
  t.same(p2.ids, ['e0']);
  t.equal(p2.next, null, 'no next on the last page');
  const back = await list({ limit: 3, dir: 'desc', prev: p2.prev ?? undefined });
  t.same(back.ids, ['e3', 'e2', 'e1'], 'prev walks back to the same page');

  const a1 = await list({ limit: 2, dir: 'asc' });
  t.same(a1.ids, ['e0', 'e1']);
  const a2 = await list({ limit: 2, dir: 'asc', next: a1.next ?? undefined });
  t.same(a2.ids, ['e2', 'e3'], 'the tie at one instant splits across pages without a skip or a repeat');
  t.same((await list({ limit: 2, dir: 'asc', prev: a2.prev ?? undefined })).ids, ['e0', 'e1']);

  await t.rejects(
    list({ limit: 2, dir: 'asc', next: 'garbage' }),
    { name: 'Error', message: /unchecked paging parameters/ },
    'no HTTP error',
  );
});
