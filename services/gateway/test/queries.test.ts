import t, { type Test } from 'tap';
import type { Knex } from '@switchyard/shared/db/index.ts';
import { ensurePartitions } from '@switchyard/shared/db/partitions.ts';
import { uuidv7 } from '@switchyard/shared/ids.ts';
import { buildTestApp, type TestApp } from './helpers.ts';

// Fixture rows are written straight into the tables, in the pipeline's column contract, and every
// answer is checked against the same rows filtered and sorted here.

interface Ev {
  tenant_id: string;
  id: string;
  topic: string;
  time: Date;
  received_at: Date;
  data: Record<string, unknown>;
  metadata: Record<string, unknown> | null;
  destination_id: string | null;
  matched: string[];
}
interface Del {
  tenant_id: string;
  event_id: string;
  destination_id: string;
  topic: string;
  event_time: Date;
  status: 'pending' | 'success' | 'failed' | 'skipped';
  successful_at: Date | null;
  created_at: Date;
}
interface Att {
  id: string;
  tenant_id: string;
  destination_id: string;
  event_id: string;
  topic: string;
  status: 'success' | 'failed';
  code: string;
  response_data: Record<string, unknown>;
  attempt_number: number;
  time: Date;
}

const fx = { events: [] as Ev[], deliveries: [] as Del[], attempts: [] as Att[] };
const TOPICS = ['user.created', 'order.paid', 'user.deleted'];
const BASE = Date.now() - 3_600_000;
let attemptClock = BASE;
/** Newer than every fixture: rows stamped with it arrive at the head of a newest-first list. */
let headClock = Date.now() + 60_000;

async function insertEvent(db: Knex, e: Ev, deliveries: Omit<Del, 'tenant_id' | 'event_id' | 'topic' | 'event_time' | 'created_at'>[]) {
  fx.events.push(e);
  await db('events').insert({
    tenant_id: e.tenant_id,
    id: e.id,
    topic: e.topic,
    time: e.time,
    metadata: e.metadata ? JSON.stringify(e.metadata) : null,
    data: JSON.stringify(e.data),
    eligible_for_retry: true,
    destination_id: e.destination_id,
    received_at: e.received_at,
    matched_destination_ids: e.matched,
  });
  for (const d of deliveries) {
    // As the pipeline writes them: created_at is the event's received_at.
    const row: Del = { ...d, tenant_id: e.tenant_id, event_id: e.id, topic: e.topic, event_time: e.time, created_at: e.received_at };
    fx.deliveries.push(row);
    await db('deliveries').insert({ ...row, attempts: 1 });
  }
}

async function insertAttempt(db: Knex, a: Omit<Att, 'id' | 'time' | 'code' | 'response_data'> & { time?: Date }) {
  attemptClock += 997;
  const time = a.time ?? new Date(attemptClock);
  const row: Att = {
    ...a,
    id: uuidv7(time.getTime()),
    time,
    code: a.status === 'success' ? '200' : '503',
    response_data: { status: a.status === 'success' ? 200 : 503, body: `#${a.attempt_number}` },
  };
  fx.attempts.push(row);
  // As the pipeline writes them: the event's partition key rides along.
  const event = fx.events.find((e) => e.tenant_id === a.tenant_id && e.id === a.event_id);
  await db('attempts').insert({
    ...row,
    response_data: JSON.stringify(row.response_data),
    manual: false,
    final: true,
    duration_ms: 12,
    event_received_at: event?.received_at ?? null,
  });
  return row;
}

/** An event received the moment it was made, no metadata, routed by topic to `matched`. */
function plainEvent(tenant_id: string, id: string, time: Date, matched: string[], over: Partial<Ev> = {}): Ev {
  return {
    tenant_id,
    id,
    topic: 'user.created',
    time,
    received_at: time,
    data: {},
    metadata: null,
    destination_id: null,
    matched,
    ...over,
  };
}

/** acme: 30 events to d1, every third also to d2, statuses varied; globex: 5 events to g1. */
async function seed(db: Knex) {
  for (let i = 0; i < 30; i++) {
    const time = new Date(BASE + i * 60_000);
    const toD2 = i % 3 === 0;
    const failed = i % 4 === 0;
    const e: Ev = {
      tenant_id: 'acme',
      id: `evt_${String(i).padStart(2, '0')}`,
      topic: TOPICS[i % 3] as string,
      time,
      received_at: new Date(time.getTime() + 3),
      data: { n: i },
      metadata: { source: 'test' },
      destination_id: null,
      matched: toD2 ? ['d1', 'd2'] : ['d1'],
    };
    const deliveries: Omit<Del, 'tenant_id' | 'event_id' | 'topic' | 'event_time' | 'created_at'>[] = [
      { destination_id: 'd1', status: failed ? 'failed' : 'success', successful_at: failed ? null : new Date(time.getTime() + 1500) },
    ];
    if (toD2) deliveries.push({ destination_id: 'd2', status: 'pending', successful_at: null });
    await insertEvent(db, e, deliveries);
    const attempts: Array<[string, 'failed' | 'success', number]> = failed
      ? [
          ['d1', 'failed', 1],
          ['d1', 'failed', 2],
        ]
      : [['d1', 'success', 1]];
    if (toD2) attempts.push(['d2', 'failed', 1]);
    for (const [destination_id, status, attempt_number] of attempts) {
      await insertAttempt(db, { tenant_id: 'acme', destination_id, event_id: e.id, topic: e.topic, status, attempt_number });
    }
  }
  // An event whose caller-supplied time is long ago: it still lands in today's partition.
  await insertEvent(
    db,
    {
      tenant_id: 'acme',
      id: 'evt_old',
      topic: 'user.created',
      time: new Date('2001-02-03T04:05:06.000Z'),
      received_at: new Date(BASE + 10),
      data: { old: true },
      metadata: null,
      destination_id: 'd1',
      matched: ['d1'],
    },
    [{ destination_id: 'd1', status: 'success', successful_at: new Date(BASE + 20) }],
  );
  await insertAttempt(db, {
    tenant_id: 'acme',
    destination_id: 'd1',
    event_id: 'evt_old',
    topic: 'user.created',
    status: 'success',
    attempt_number: 1,
  });
  for (let i = 0; i < 5; i++) {
    const time = new Date(BASE + i * 60_000 + 7);
    const id = `evt_${String(i).padStart(2, '0')}`; // the same ids as acme's: ids are only unique per tenant
    await insertEvent(db, plainEvent('globex', id, time, ['g1'], { data: { secret: 'globex' } }), [
      { destination_id: 'g1', status: 'success', successful_at: time },
    ]);
    await insertAttempt(db, {
      tenant_id: 'globex',
      destination_id: 'g1',
      event_id: id,
      topic: 'user.created',
      status: 'success',
      attempt_number: 1,
    });
  }
}

const byTimeDesc = <T extends { time: Date; id: string }>(a: T, b: T) => b.time.getTime() - a.time.getTime() || (a.id < b.id ? 1 : -1);
const ids = (list: { id: string }[]) => list.map((x) => x.id);

/** Follows `next` from the first page to the last; returns every page. */
async function allPages(call: TestApp['call'], url: string, token?: string) {
  const pages: any[] = [];
  let next: string | null = null;
  do {
    const sep = url.includes('?') ? '&' : '?';
    const r = await call('GET', next ? `${url}${sep}next=${encodeURIComponent(next)}` : url, undefined, token);
    if (r.status !== 200) throw new Error(`${url}: ${r.status} ${JSON.stringify(r.body)}`);
    pages.push(r.body);
    next = r.body.pagination.next;
  } while (next && pages.length < 100);
  return pages;
}

t.test('events and attempts queries', async (t) => {
  const app = await buildTestApp(t);
  const { call, db } = app;
  for (const tenant of ['acme', 'globex']) t.equal((await call('PUT', `/api/v1/tenants/${tenant}`)).status, 201);
  for (const [tenant, id] of [
    ['acme', 'd1'],
    ['acme', 'd2'],
    ['acme', 'd3'],
    ['globex', 'g1'],
  ]) {
    const r = await call('POST', `/api/v1/tenants/${tenant}/destinations`, {
      id,
      type: 'webhook',
      topics: '*',
      config: { url: 'https://example.com/hook' },
    });
    t.equal(r.status, 201, `destination ${tenant}/${id}`);
  }
  const acmeToken: string = (await call('GET', '/api/v1/tenants/acme/token')).body.token;
  await seed(db);
  const acmeAttempts = (dest?: string) =>
    fx.attempts.filter((a) => a.tenant_id === 'acme' && (!dest || a.destination_id === dest)).sort(byTimeDesc);

  t.test('attempts of a destination: newest first, the documented fields, the envelope', async (t) => {
    const r = await call('GET', '/api/v1/tenants/acme/destinations/d1/attempts');
    t.equal(r.status, 200);
    t.same(ids(r.body.models), ids(acmeAttempts('d1')));
    t.same(r.body.pagination, { order_by: 'time', dir: 'desc', limit: 100, next: null, prev: null });
    const a = r.body.models[0];
    const want = acmeAttempts('d1')[0] as Att;
    t.same(
      a,
      {
        id: want.id,
        tenant_id: 'acme',
        destination_id: 'd1',
        event_id: want.event_id,
        topic: want.topic,
        status: want.status,
        code: want.code,
        response_data: want.response_data,
        attempt_number: want.attempt_number,
        manual: false,
        final: true,
        duration_ms: 12,
        time: want.time.toISOString(),
      },
      'response_data is part of an attempt by default; event is not',
    );
    // Both path forms and the token-inferred form serve the same listing.
    t.same(ids((await call('GET', '/api/v1/acme/destinations/d1/attempts')).body.models), ids(r.body.models));
    t.same(ids((await call('GET', '/api/v1/destinations/d1/attempts', undefined, acmeToken)).body.models), ids(r.body.models));
  });

  t.test('attempt filters, alone and combined, in every multi-value form', async (t) => {
    const d1 = acmeAttempts('d1');
    const cases: [string, Att[]][] = [
      ['status=failed', d1.filter((a) => a.status === 'failed')],
      ['status=success', d1.filter((a) => a.status === 'success')],
      ['status=success&status=failed', d1],
      ['status[]=failed', d1.filter((a) => a.status === 'failed')],
      ['status[0]=failed&status[1]=success', d1],
      ['status=failed,success', d1],
      ['event_id=evt_04', d1.filter((a) => a.event_id === 'evt_04')],
      ['event_id=evt_04&event_id=evt_05', d1.filter((a) => ['evt_04', 'evt_05'].includes(a.event_id))],
      ['event_id[]=evt_04&event_id[]=evt_07', d1.filter((a) => ['evt_04', 'evt_07'].includes(a.event_id))],
      ['event_id[0]=evt_04&event_id[1]=evt_08', d1.filter((a) => ['evt_04', 'evt_08'].includes(a.event_id))],
      ['event_id=evt_04,evt_09', d1.filter((a) => ['evt_04', 'evt_09'].includes(a.event_id))],
      ['event_id=evt_04&status=success', []],
      ['event_id=evt_04&status=failed', d1.filter((a) => a.event_id === 'evt_04')],
      ['topic=order.paid', d1.filter((a) => a.topic === 'order.paid')],
      ['topic=order.paid&topic=user.deleted', d1.filter((a) => a.topic !== 'user.created')],
      ['topic[]=order.paid&status=failed', d1.filter((a) => a.topic === 'order.paid' && a.status === 'failed')],
      ['event_id=nope', []],
    ];
    const mid = d1[10] as Att;
    const late = d1[3] as Att;
    const iso = (d: Date) => encodeURIComponent(d.toISOString());
    // The same instant at an offset RFC 3339 allows and Postgres does not take (beyond ±15:59).
    const atOffset = (d: Date, minutes: number) => {
      const local = new Date(d.getTime() + minutes * 60_000).toISOString().slice(0, -1);
      const m = Math.abs(minutes);
      const hhmm = `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
      return encodeURIComponent(`${local}${minutes < 0 ? '-' : '+'}${hhmm}`);
    };
    cases.push(
      [`time[gte]=${atOffset(mid.time, -(19 * 60 + 43))}`, d1.filter((a) => a.time >= mid.time)],
      [`time[lt]=${atOffset(mid.time, 23 * 60 + 59)}`, d1.filter((a) => a.time < mid.time)],
      ['time[gte]=0601-05-28T18:33:16-19:43', d1],
      ['time[lt]=0167-12-16T02:02:42.1-18:26', []],
      [`time[gte]=${iso(mid.time)}`, d1.filter((a) => a.time >= mid.time)],
      [`time[gt]=${iso(mid.time)}`, d1.filter((a) => a.time > mid.time)],
      [`time[lte]=${iso(mid.time)}`, d1.filter((a) => a.time <= mid.time)],
      [`time[lt]=${iso(mid.time)}`, d1.filter((a) => a.time < mid.time)],
      [`time[gte]=${iso(mid.time)}&time[lt]=${iso(late.time)}`, d1.filter((a) => a.time >= mid.time && a.time < late.time)],
      [`time[gte]=${iso(mid.time)}&status=failed`, d1.filter((a) => a.time >= mid.time && a.status === 'failed')],
      [
        `time[lte]=${iso(mid.time)}&topic=user.created&status=success`,
        d1.filter((a) => a.time <= mid.time && a.topic === 'user.created' && a.status === 'success'),
      ],
      ['time[gte]=2001-01-01', d1],
      ['time[lt]=2001-01-01', []],
      ['time[gte]=2001-01-01T00:00:00%2B02:00', d1],
    );
    for (const [q, want] of cases) {
      const r = await call('GET', `/api/v1/tenants/acme/destinations/d1/attempts?${q}`);
      t.equal(r.status, 200, q);
      t.same(ids(r.body.models), ids(want), q);
    }
  });

  t.test('keyset paging: forward, back, both ends, rows arriving in between', async (t) => {
    const url = '/api/v1/tenants/acme/destinations/d1/attempts?limit=7';
    const before = acmeAttempts('d1');
    const seen: string[] = [];
    const pages: any[] = [];
    let next: string | null = null;
    const arrivedBehind: string[] = [];
    do {
      const r = await call('GET', next ? `${url}&next=${encodeURIComponent(next)}` : url);
      t.equal(r.status, 200);
      if (!pages.length) t.equal(r.body.pagination.prev, null, 'no prev on the first page');
      else t.type(r.body.pagination.prev, 'string', 'prev on later pages');
      pages.push(r.body);
      seen.push(...ids(r.body.models));
      next = r.body.pagination.next;
      // Rows arrive between fetches: a newer one (before the position reached: never shown when
      // paging on), and one older than every row so far (ahead of the position: shown once).
      const newest = await insertAttempt(db, {
        tenant_id: 'acme',
        destination_id: 'd1',
        event_id: 'evt_29',
        topic: 'order.paid',
        status: 'success',
        attempt_number: 9,
      });
      t.ok(newest);
      const behind = await insertAttempt(db, {
        tenant_id: 'acme',
        destination_id: 'd1',
        event_id: 'evt_00',
        topic: 'user.created',
        status: 'failed',
        attempt_number: 9,
        time: new Date(BASE - 60_000 - pages.length * 1000),
      });
      arrivedBehind.push(behind.id);
    } while (next);
    t.equal(new Set(seen).size, seen.length, 'no row twice');
    for (const id of ids(before)) t.ok(seen.includes(id), 'every row present at the start is seen');
    // Rows that arrived ahead of the position before it passed them are seen; the last one arrived after the end.
    t.same(
      seen.filter((id) => arrivedBehind.includes(id)),
      arrivedBehind.slice(0, -1),
      'rows arriving ahead of the position are seen, oldest last',
    );
    const last = pages.at(-1);
    t.equal(last.pagination.next, null, 'no next on the last page');
    t.ok(last.models.length > 0);

    // Back from the last page to the first, with no more arrivals: every row once, in order, and
    // the walk ends on a page without prev (which holds the rows that arrived at the head).
    let prev: string | null = last.pagination.prev;
    const back: string[][] = [];
    while (prev) {
      const r = await call('GET', `${url}&prev=${encodeURIComponent(prev)}`);
      t.equal(r.status, 200);
      t.ok(r.body.models.length > 0);
      back.unshift(ids(r.body.models));
      t.type(r.body.pagination.next, 'string', 'next on every page walked back to');
      prev = r.body.pagination.prev;
    }
    const now = ids(acmeAttempts('d1'));
    const upToLast = now.slice(0, now.indexOf(last.models.at(-1).id) + 1);
    t.same([...back.flat(), ...ids(last.models)], upToLast, 'walking back covers every row once, in order');
    t.same(
      back.slice(1).map((p) => p.length),
      back.slice(1).map(() => 7),
      'full pages behind the first',
    );

    // Ascending order pages the same rows, oldest first.
    const asc = await allPages(call, '/api/v1/tenants/acme/destinations/d1/attempts?limit=9&dir=asc');
    const ascIds = asc.flatMap((p) => ids(p.models));
    t.same(ascIds, ids(acmeAttempts('d1')).reverse(), 'dir=asc pages oldest first');
    t.ok(asc.every((p) => p.pagination.dir === 'asc'));
    // A cursor carries its direction: leaving dir out keeps it.
    const second = await call(
      'GET',
      `/api/v1/tenants/acme/destinations/d1/attempts?limit=9&next=${encodeURIComponent(asc[0].pagination.next)}`,
    );
    t.same(ids(second.body.models), ids(asc[1].models));
    // limit=1 pages one row at a time, consistently.
    const ones = await allPages(call, '/api/v1/tenants/acme/destinations/d2/attempts?limit=1');
    t.same(
      ones.flatMap((p) => ids(p.models)),
      ids(acmeAttempts('d2')),
    );
    t.equal(ones.at(-1).pagination.next, null);
    // Filters hold across pages.
    const failed = await allPages(call, '/api/v1/tenants/acme/destinations/d1/attempts?limit=4&status=failed');
    t.same(
      failed.flatMap((p) => ids(p.models)),
      ids(acmeAttempts('d1').filter((a) => a.status === 'failed')),
    );
  });

  t.test('invalid parameters: 422 naming each problem', async (t) => {
    const base = '/api/v1/tenants/acme/destinations/d1/attempts';
    const eventCursor = (await call('GET', '/api/v1/acme/events?limit=1')).body.pagination.next;
    const ascCursor = (await call('GET', `${base}?limit=1&dir=asc`)).body.pagination.next;
    const cases: [string, string, RegExp | string][] = [
      ['status=bogus', 'query.status', /success, failed/],
      ['status=success&status=nope', 'query.status', /nope/],
      ['time[gte]=yesterday', 'query.time[gte]', /ISO 8601/],
      ['time[gte]=2024-13-01T00:00:00Z', 'query.time[gte]', /ISO 8601/],
      ['time[gte]=2024-05-01T00:00:00', 'query.time[gte]', /offset/],
      ['time[since]=2024-05-01', 'query.time[since]', /gte, gt, lte or lt/],
      ['time=2024-05-01', 'query.time', /bound/],
      ['time[gte]=2024-05-01&time[gte]=2024-05-02', 'query.time[gte]', /single/],
      ['limit=0', 'query.limit', /1 to 1000/],
      ['limit=1001', 'query.limit', /1 to 1000/],
      ['limit=ten', 'query.limit', /1 to 1000/],
      ['limit=-5', 'query.limit', /1 to 1000/],
      ['limit=2.5', 'query.limit', /1 to 1000/],
      ['next=not-a-cursor', 'query.next', /cursor/],
      ['prev=eyJ4IjoxfQ', 'query.prev', /cursor/],
      [`next=${encodeURIComponent(eventCursor)}`, 'query.next', /cursor/],
      [`next=${encodeURIComponent(ascCursor)}&dir=desc`, 'query.dir', /dir=asc/],
      [`next=${encodeURIComponent(ascCursor)}&prev=${encodeURIComponent(ascCursor)}`, 'query.next', /prev/],
      ['include=everything', 'query.include', /event, event.data, response_data, destination/],
      ['dir=up', 'query.dir', /asc, desc/],
      ['order_by=size', 'query.order_by', /time/],
      ['limit=5&limit=6', 'query.limit', /single/],
    ];
    for (const [q, path, message] of cases) {
      const r = await call('GET', `${base}?${q}`);
      t.equal(r.status, 422, q);
      t.equal(r.body.code, 'VALIDATION_FAILED', q);
      t.match(r.body.problems, [{ path, message }], q);
    }
    const many = await call('GET', `${base}?status=x&limit=0&time[lt]=soon&include=y`);
    t.equal(many.status, 422);
    t.same(
      many.body.problems.map((p: { path: string }) => p.path).sort(),
      ['query.include', 'query.limit', 'query.status', 'query.time[lt]'],
      'every problem at once',
    );
    // The same parsing guards the other listings.
    t.equal((await call('GET', '/api/v1/attempts?limit=5000')).status, 422);
    t.equal((await call('GET', '/api/v1/acme/events?status=pending')).status, 422);
    t.equal((await call('GET', '/api/v1/acme/destination/d1/events?time[gte]=noon')).status, 422);
    t.equal((await call('GET', `/api/v1/acme/events?next=${encodeURIComponent(ascCursor)}`)).status, 422, 'an attempt cursor on events');
  });

  t.test('well-formed times that name no real instant: 422, never handed to Postgres', async (t) => {
    // Date.parse rolls 2026-02-30 over into March; Postgres refuses it. Year 0 is no AD year.
    const days = ['2026-02-30', '2026-04-31', '2026-02-29', '0000-01-01'];
    const times = ['2026-02-30T00:00:00Z', '2026-11-31T12:00:00%2B02:00', '2026-01-01T24:00:00Z', '0000-06-01T00:00:00Z'];
    for (const path of ['/api/v1/tenants/acme/attempts', '/api/v1/tenants/acme/events', '/api/v1/acme/destination/d1/events']) {
      for (const v of [...days, ...times]) {
        const r = await call('GET', `${path}?time[gte]=${v}`);
        t.equal(r.status, 422, `${path} ${v}`);
        t.equal(r.body.code, 'VALIDATION_FAILED', `${path} ${v}`);
        t.match(r.body.problems, [{ path: 'query.time[gte]', message: /ISO 8601/ }], `${path} ${v}`);
      }
    }
    for (const v of ['2024-02-29', '0001-01-01', '9999-12-31', '2026-01-31T23:59:59.999999Z'])
      t.equal((await call('GET', `/api/v1/tenants/acme/attempts?time[gte]=${v}`)).status, 200, `${v}: a real one`);
  });

  t.test('tampered cursors: a time that is no instant or a NUL in a string is 422, as any bad cursor', async (t) => {
    const cursor = (c: Record<string, unknown>) => Buffer.from(JSON.stringify(c)).toString('base64url');
    const at = '2026-01-02T06:28:26.395000Z';
    const cases: [string, Record<string, unknown>][] = [
      ['/api/v1/tenants/acme/events', { k: 'evt', d: 'desc', t: '2026-13-45T06:28:26.395000Z', i: 'x', n: 'acme', w: 'n' }],
      ['/api/v1/tenants/acme/events', { k: 'evt', d: 'desc', t: '2026-02-30T06:28:26.395000Z', i: 'x', n: 'acme', w: 'n' }],
      ['/api/v1/tenants/acme/events', { k: 'evt', d: 'desc', t: '2026-01-02T24:28:26.395000Z', i: 'x', n: 'acme', w: 'n' }],
      ['/api/v1/tenants/acme/events', { k: 'evt', d: 'desc', t: '0000-01-02T06:28:26.395000Z', i: 'x', n: 'acme', w: 'n' }],
      ['/api/v1/tenants/acme/events', { k: 'evt', d: 'desc', t: at, i: 'x\u0000', n: 'acme', w: 'n' }],
      ['/api/v1/tenants/acme/events', { k: 'evt', d: 'desc', t: at, i: 'x', n: 'ac\u0000me', w: 'n' }],
      ['/api/v1/tenants/acme/attempts', { k: 'att', d: 'desc', t: '2026-04-31T06:28:26.395000Z', i: uuidv7(), w: 'n' }],
      ['/api/v1/tenants', { k: 'ten', d: 'desc', t: '2026-13-45T06:28:26.395000Z', i: 'acme', w: 'n' }],
      ['/api/v1/tenants', { k: 'ten', d: 'desc', t: at, i: 'ac\u0000me', w: 'n' }],
    ];
    for (const [path, c] of cases) {
      const r = await call('GET', `${path}?next=${cursor(c)}`);
      const what = `${path} ${JSON.stringify(c)}`;
      t.equal(r.status, 422, what);
      t.equal(r.body.code, 'VALIDATION_FAILED', what);
      t.match(r.body.problems, [{ path: 'query.next', message: /not a valid cursor/ }], what);
    }
    // The same cursors untampered page as before.
    t.equal(
      (await call('GET', `/api/v1/tenants/acme/events?next=${cursor({ k: 'evt', d: 'desc', t: at, i: 'x', n: 'acme', w: 'n' })}`)).status,
      200,
    );
    t.equal((await call('GET', `/api/v1/tenants?next=${cursor({ k: 'ten', d: 'desc', t: at, i: 'acme', w: 'n' })}`)).status, 200);
  });

  t.test('include expands the event, its data and the destination', async (t) => {
    const base = '/api/v1/tenants/acme/destinations/d1/attempts?event_id=evt_05';
    const plain = (await call('GET', base)).body.models[0];
    t.notOk('event' in plain);
    t.notOk('destination' in plain);
    const withEvent = (await call('GET', `${base}&include=event`)).body.models[0];
    t.same(withEvent.event, {
      id: 'evt_05',
      tenant_id: 'acme',
      topic: 'user.deleted',
      time: new Date(BASE + 5 * 60_000).toISOString(),
      eligible_for_retry: true,
      metadata: { source: 'test' },
    });
    const withData = (await call('GET', `${base}&include=event.data`)).body.models[0];
    t.same(withData.event.data, { n: 5 });
    const withDest = (await call('GET', `${base}&include[]=destination&include[]=response_data`)).body.models[0];
    t.match(withDest.destination, { id: 'd1', type: 'webhook', config: { url: 'https://example.com/hook' } });
    t.same(withDest.response_data, { status: 200, body: '#1' });
    const all = (await call('GET', `${base}&include=event.data,destination`)).body.models[0];
    t.ok(all.event.data && all.destination);
    const one = await call('GET', `/api/v1/tenants/acme/destinations/d1/attempts/${plain.id}?include=event`);
    t.equal(one.status, 200);
    t.equal(one.body.event.id, 'evt_05');
    t.equal(one.body.id, plain.id);
  });

  t.test('include=event reads the event from its own partition, or from every one for older rows', async (t) => {
    const base = '/api/v1/tenants/acme/destinations/d1/attempts?event_id=evt_07&include=event';
    const eventQueries: string[] = [];
    const listen = (q: { sql: string }) => {
      if (/ FROM events e /.test(q.sql)) eventQueries.push(q.sql);
    };
    db.on('query', listen);
    t.teardown(() => void db.off('query', listen));
    const hinted = (await call('GET', base)).body.models[0];
    t.equal(hinted.event.id, 'evt_07');
    // The page's metadata sizes (for the byte bound), then the events it keeps.
    t.equal(eventQueries.length, 2, 'two events queries');
    for (const q of eventQueries) t.match(q, /e\.received_at >= .* AND e\.received_at <= /, 'bounded to the event partition (pruned)');
    t.notOk('event_received_at' in hinted || 'event_received_key' in hinted, 'the API shape is unchanged');

    // A row written before the column existed: found all the same, in every partition.
    await db('attempts').where({ id: hinted.id }).update({ event_received_at: null });
    eventQueries.length = 0;
    const unhinted = (await call('GET', base)).body.models[0];
    t.equal(unhinted.event.id, 'evt_07', 'found without the hint');
    t.equal(eventQueries.length, 2);
    for (const q of eventQueries) t.notMatch(q, /received_at >=/, 'looked up in every partition');
    t.same(unhinted.event, hinted.event, 'the same event either way');
  });

  t.test('one attempt: found in scope, 404 ATTEMPT_NOT_FOUND otherwise', async (t) => {
    const mine = acmeAttempts('d1')[0] as Att;
    const theirs = fx.attempts.find((a) => a.tenant_id === 'globex') as Att;
    t.equal((await call('GET', `/api/v1/tenants/acme/destinations/d1/attempts/${mine.id}`)).body.id, mine.id);
    t.equal((await call('GET', `/api/v1/acme/attempts/${mine.id}`)).body.id, mine.id);
    t.equal((await call('GET', `/api/v1/attempts/${mine.id}`)).body.id, mine.id, 'admin, any tenant');
    t.equal((await call('GET', `/api/v1/attempts/${theirs.id}`)).body.tenant_id, 'globex');
    t.equal((await call('GET', `/api/v1/attempts/${mine.id}`, undefined, acmeToken)).body.id, mine.id, 'tenant token, own attempt');
    for (const [url, token] of [
      [`/api/v1/tenants/acme/destinations/d2/attempts/${mine.id}`, undefined],
      [`/api/v1/tenants/acme/destinations/d1/attempts/${theirs.id}`, undefined],
      [`/api/v1/acme/attempts/${theirs.id}`, undefined],
      [`/api/v1/attempts/${theirs.id}`, acmeToken],
      [`/api/v1/destinations/d1/attempts/${theirs.id}`, acmeToken],
      ['/api/v1/attempts/not-a-uuid', undefined],
      [`/api/v1/attempts/${uuidv7()}`, undefined],
      ['/api/v1/attempts/00000000-0000-4000-8000-000000000000', undefined],
    ] as [string, string | undefined][]) {
      const r = await call('GET', url, undefined, token);
      t.equal(r.status, 404, url);
      t.equal(r.body.code, 'ATTEMPT_NOT_FOUND', url);
    }
    t.equal((await call('GET', `/api/v1/tenants/acme/destinations/nope/attempts/${mine.id}`)).body.code, 'DESTINATION_NOT_FOUND');
    t.equal((await call('GET', `/api/v1/tenants/nobody/destinations/d1/attempts`)).body.code, 'TENANT_NOT_FOUND');
    t.equal((await call('GET', '/api/v1/tenants/acme/destinations/nope/attempts')).body.code, 'DESTINATION_NOT_FOUND');
  });

  t.test('admin /attempts spans tenants; a tenant token sees only its own', async (t) => {
    const everyone = await allPages(call, '/api/v1/attempts?limit=50');
    t.same(
      everyone.flatMap((p) => ids(p.models)),
      ids([...fx.attempts].sort(byTimeDesc)),
      'admin: every tenant',
    );
    const globex = (await call('GET', '/api/v1/attempts?tenant_id=globex')).body.models;
    t.same(ids(globex), ids(fx.attempts.filter((a) => a.tenant_id === 'globex').sort(byTimeDesc)));
    const byDest = (await call('GET', '/api/v1/attempts?destination_id=g1&destination_id=d2')).body.models;
    t.same(
      ids(byDest),
      ids(fx.attempts.filter((a) => a.destination_id === 'g1' || a.destination_id === 'd2').sort(byTimeDesc)),
      'destination filter without a tenant',
    );
    const byTopic = (await call('GET', '/api/v1/attempts?topic=user.created&status=success&limit=1000')).body.models;
    t.same(ids(byTopic), ids(fx.attempts.filter((a) => a.topic === 'user.created' && a.status === 'success').sort(byTimeDesc)));
    const both = (await call('GET', '/api/v1/attempts?tenant_id=acme,globex&event_id=evt_03')).body.models;
    t.same(ids(both), ids(fx.attempts.filter((a) => a.event_id === 'evt_03').sort(byTimeDesc)), 'the same event id in two tenants');

    const own = await allPages(call, '/api/v1/attempts?limit=25', acmeToken);
    t.same(
      own.flatMap((p) => ids(p.models)),
      ids(acmeAttempts()),
      'tenant token: its own tenant only',
    );
    t.same(
      ids((await call('GET', '/api/v1/attempts?destination_id=g1', undefined, acmeToken)).body.models),
      [],
      "another tenant's destination yields nothing",
    );
    t.same(
      ids((await call('GET', '/api/v1/attempts?event_id=evt_03', undefined, acmeToken)).body.models),
      ids(acmeAttempts().filter((a) => a.event_id === 'evt_03')),
    );
    t.equal((await call('GET', '/api/v1/attempts?tenant_id=acme', undefined, acmeToken)).status, 200);
    t.equal((await call('GET', '/api/v1/attempts?tenant_id=globex', undefined, acmeToken)).status, 403, 'naming another tenant');
    t.equal((await call('GET', '/api/v1/tenants/globex/destinations/g1/attempts', undefined, acmeToken)).status, 403);
    t.equal((await call('GET', '/api/v1/globex/attempts', undefined, acmeToken)).status, 403);
    t.equal((await call('GET', '/api/v1/globex/events', undefined, acmeToken)).status, 403);
    t.equal((await call('GET', '/api/v1/events/evt_01', undefined, 'not-a-token')).status, 401);
    t.equal((await call('GET', '/api/v1/attempts', undefined, null)).status, 401);
  });

  const acmeEvents = () => fx.events.filter((e) => e.tenant_id === 'acme').sort(byTimeDesc);
  const delivered = (e: Ev, pred: (d: Del) => boolean) =>
    fx.deliveries.some((d) => d.tenant_id === e.tenant_id && d.event_id === e.id && pred(d));
  const successfulAt = (e: Ev, dests?: string[]) => {
    const times = fx.deliveries
      .filter((d) => d.tenant_id === e.tenant_id && d.event_id === e.id && d.successful_at && (!dests || dests.includes(d.destination_id)))
      .map((d) => (d.successful_at as Date).getTime());
    return times.length ? new Date(Math.min(...times)).toISOString() : undefined;
  };

  t.test('tenant events: filters, successful_at, paging', async (t) => {
    const r = await call('GET', '/api/v1/acme/events');
    t.equal(r.status, 200);
    t.same(ids(r.body.models), ids(acmeEvents()), 'newest event time first; an old event time sorts last');
    const e5 = r.body.models.find((e: { id: string }) => e.id === 'evt_05');
    t.same(e5, {
      id: 'evt_05',
      tenant_id: 'acme',
      topic: 'user.deleted',
      time: new Date(BASE + 5 * 60_000).toISOString(),
      eligible_for_retry: true,
      metadata: { source: 'test' },
      data: { n: 5 },
      successful_at: new Date(BASE + 5 * 60_000 + 1500).toISOString(),
    });
    t.equal(
      r.body.models.find((e: { id: string }) => e.id === 'evt_04').successful_at,
      undefined,
      'never delivered successfully: left out',
    );
    for (const e of r.body.models)
      t.equal(e.successful_at, successfulAt(fx.events.find((x) => x.tenant_id === 'acme' && x.id === e.id) as Ev), e.id);

    const mid = acmeEvents()[12] as Ev;
    const iso = encodeURIComponent(mid.time.toISOString());
    const cases: [string, Ev[]][] = [
      ['destination_id=d2', acmeEvents().filter((e) => delivered(e, (d) => d.destination_id === 'd2'))],
      ['destination_id=d1&destination_id=d2', acmeEvents()],
      ['destination_id[]=d2&destination_id[]=nope', acmeEvents().filter((e) => delivered(e, (d) => d.destination_id === 'd2'))],
      ['destination_id=nope', []],
      ['status=failed', acmeEvents().filter((e) => delivered(e, (d) => d.status === 'failed'))],
      ['status=success', acmeEvents().filter((e) => delivered(e, (d) => d.status === 'success'))],
      ['status=success,failed', acmeEvents().filter((e) => delivered(e, (d) => d.status === 'success' || d.status === 'failed'))],
      ['destination_id=d2&status=success', []],
      [
        'destination_id=d1&status=failed',
        acmeEvents().filter((e) => delivered(e, (d) => d.destination_id === 'd1' && d.status === 'failed')),
      ],
      ['topic=order.paid', acmeEvents().filter((e) => e.topic === 'order.paid')],
      [
        'topic=order.paid&status=success',
        acmeEvents().filter((e) => e.topic === 'order.paid' && delivered(e, (d) => d.status === 'success')),
      ],
      [`time[gte]=${iso}`, acmeEvents().filter((e) => e.time >= mid.time)],
      [
        `time[lt]=${iso}&destination_id=d2`,
        acmeEvents().filter((e) => e.time < mid.time && delivered(e, (d) => d.destination_id === 'd2')),
      ],
      ['time[lt]=2002-01-01', acmeEvents().filter((e) => e.id === 'evt_old')],
    ];
    for (const [q, want] of cases) {
      const res = await call('GET', `/api/v1/acme/events?${q}`);
      t.equal(res.status, 200, q);
      t.same(ids(res.body.models), ids(want), q);
    }
    const d2 = (await call('GET', '/api/v1/acme/events?destination_id=d2')).body.models;
    for (const e of d2) t.equal(e.successful_at, undefined, 'successful_at counts the filtered destinations only');

    // Paging with events arriving in between, over both plans (events, and deliveries).
    for (const q of ['limit=4', 'limit=4&destination_id=d1', 'limit=3&status=success']) {
      const before = ids((await call('GET', `/api/v1/acme/events?${q}&limit=1000`.replace(/limit=\d+&/, ''))).body.models);
      const seen: string[] = [];
      let next: string | null = null;
      let n = 0;
      do {
        const res = await call('GET', `/api/v1/acme/events?${q}${next ? `&next=${encodeURIComponent(next)}` : ''}`);
        t.equal(res.status, 200);
        if (n === 0) t.equal(res.body.pagination.prev, null);
        seen.push(...ids(res.body.models));
        next = res.body.pagination.next;
        n++;
        // A new event at the head of the list, between fetches.
        headClock += 1000;
        const time = new Date(headClock);
        await insertEvent(db, plainEvent('acme', `new_${q.length}_${n}`, time, ['d1'], { topic: 'order.paid' }), [
          { destination_id: 'd1', status: 'success', successful_at: time },
        ]);
      } while (next);
      t.equal(new Set(seen).size, seen.length, `${q}: no event twice`);
      t.same(seen, before, `${q}: exactly the events present at the start, in order`);
    }
    // And back again.
    const pages = await allPages(call, '/api/v1/acme/events?limit=5&destination_id=d1');
    let prev = pages.at(-1).pagination.prev;
    const back: string[][] = [];
    while (prev) {
      const res = await call('GET', `/api/v1/acme/events?limit=5&destination_id=d1&prev=${encodeURIComponent(prev)}`);
      back.unshift(ids(res.body.models));
      prev = res.body.pagination.prev;
    }
    t.same(
      back,
      pages.slice(0, -1).map((p) => ids(p.models)),
      'walking back returns the same pages',
    );
  });

  t.test('one event, its deliveries, and the events of a destination', async (t) => {
    const one = await call('GET', '/api/v1/acme/events/evt_04');
    t.equal(one.status, 200);
    t.match(one.body, { id: 'evt_04', tenant_id: 'acme', data: { n: 4 } });
    t.notOk('successful_at' in one.body, 'absent, not null, while no delivery succeeded');
    t.same((await call('GET', '/api/v1/tenants/acme/events/evt_05')).body.data, { n: 5 });
    t.same((await call('GET', '/api/v1/events/evt_05', undefined, acmeToken)).body.data, { n: 5 }, 'tenant token, inferred tenant');
    t.same((await call('GET', '/api/v1/events/evt_01?tenant_id=globex')).body.data, { secret: 'globex' }, 'admin picks the tenant');

    const deliveries = await call('GET', '/api/v1/acme/events/evt_00/deliveries');
    t.equal(deliveries.status, 200);
    const want = fx.attempts.filter((a) => a.tenant_id === 'acme' && a.event_id === 'evt_00').sort(byTimeDesc);
    t.same(ids(deliveries.body), ids(want));
    t.match(deliveries.body[0], {
      delivered_at: (want[0] as Att).time.toISOString(),
      status: String,
      code: String,
      response_data: Object,
      destination_id: String,
      attempt_number: Number,
    });
    t.same(
      ids((await call('GET', '/api/v1/acme/events/evt_00/deliveries?destination_id=d2')).body),
      ids(want.filter((a) => a.destination_id === 'd2')),
    );

    const destEvents = await call('GET', '/api/v1/acme/destination/d2/events');
    t.equal(destEvents.status, 200);
    t.same(ids(destEvents.body.models), ids(acmeEvents().filter((e) => delivered(e, (d) => d.destination_id === 'd2'))));
    t.ok(
      destEvents.body.models.every((e: { destination_id: string; status: string }) => e.destination_id === 'd2' && e.status === 'pending'),
    );
    const failedD1 = await call('GET', '/api/v1/tenants/acme/destination/d1/events?status=failed');
    t.same(
      ids(failedD1.body.models),
      ids(acmeEvents().filter((e) => delivered(e, (d) => d.destination_id === 'd1' && d.status === 'failed'))),
    );
    t.ok(failedD1.body.models.every((e: { status: string }) => e.status === 'failed'));
    const pagedD1 = await allPages(call, '/api/v1/acme/destination/d1/events?limit=6&status=success');
    t.same(
      pagedD1.flatMap((p) => ids(p.models)),
      ids(acmeEvents().filter((e) => delivered(e, (d) => d.destination_id === 'd1' && d.status === 'success'))),
    );

    const single = await call('GET', '/api/v1/acme/destination/d1/events/evt_08');
    t.equal(single.status, 200);
    t.ok(Array.isArray(single.body), 'an array holding the event');
    t.match(single.body, [{ id: 'evt_08', destination_id: 'd1', status: 'failed', data: { n: 8 } }]);
    t.equal((await call('GET', '/api/v1/destination/d2/events/evt_03', undefined, acmeToken)).body[0].status, 'pending');

    for (const [url, token, code] of [
      ['/api/v1/acme/events/nope', undefined, 'EVENT_NOT_FOUND'],
      ['/api/v1/acme/events/nope/deliveries', undefined, 'EVENT_NOT_FOUND'],
      ['/api/v1/acme/destination/d2/events/evt_01', undefined, 'EVENT_NOT_FOUND'],
      ['/api/v1/acme/destination/nope/events/evt_01', undefined, 'DESTINATION_NOT_FOUND'],
      ['/api/v1/acme/destination/nope/events', undefined, 'DESTINATION_NOT_FOUND'],
      ['/api/v1/acme/destination/g1/events', undefined, 'DESTINATION_NOT_FOUND'],
      ['/api/v1/nobody/events', undefined, 'TENANT_NOT_FOUND'],
      ['/api/v1/events/new_never', acmeToken, 'EVENT_NOT_FOUND'],
    ] as [string, string | undefined, string][]) {
      const r = await call('GET', url, undefined, token);
      t.equal(r.status, 404, url);
      t.equal(r.body.code, code, url);
    }
  });

  t.test('tenant token isolation on events, including guessed ids', async (t) => {
    // globex has events with the very same ids as acme's.
    const r = await call('GET', '/api/v1/events/evt_01', undefined, acmeToken);
    t.same(r.body.data, { n: 1 }, "the token's own event, never the other tenant's");
    const own = await allPages(call, '/api/v1/events?limit=40', acmeToken);
    const all = own.flatMap((p) => p.models);
    t.ok(all.length > 0);
    t.ok(
      all.every((e: { tenant_id: string }) => e.tenant_id === 'acme'),
      'only its own events',
    );
    t.notOk(JSON.stringify(all).includes('globex'));
    t.same(
      ids((await call('GET', '/api/v1/events/evt_01/deliveries', undefined, acmeToken)).body),
      ids(acmeAttempts().filter((a) => a.event_id === 'evt_01')),
    );
    t.equal((await call('GET', '/api/v1/events?tenant_id=globex', undefined, acmeToken)).status, 403);
    t.equal((await call('GET', '/api/v1/tenants/globex/events/evt_01', undefined, acmeToken)).status, 403);
    t.equal((await call('GET', '/api/v1/events?destination_id=g1', undefined, acmeToken)).body.models.length, 0);

    const admin = await allPages(call, '/api/v1/events?limit=17');
    const adminIds = admin.flatMap((p) => p.models.map((e: { tenant_id: string; id: string }) => `${e.tenant_id}/${e.id}`));
    t.equal(new Set(adminIds).size, adminIds.length, 'admin listing: equal ids of two tenants are both listed once');
    t.same(
      adminIds,
      [...fx.events]
        .sort((a, b) => b.time.getTime() - a.time.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : a.tenant_id < b.tenant_id ? 1 : -1))
        .map((e) => `${e.tenant_id}/${e.id}`),
    );
    const adminFailed = (await call('GET', '/api/v1/events?status=failed&limit=1000')).body.models;
    t.same(
      ids(adminFailed),
      ids(fx.events.filter((e) => delivered(e, (d) => d.status === 'failed')).sort(byTimeDesc)),
      'admin, status across tenants',
    );
    const globexOnly = (await call('GET', '/api/v1/events?tenant_id=globex&destination_id=g1')).body.models;
    t.same(ids(globexOnly), ids(fx.events.filter((e) => e.tenant_id === 'globex').sort(byTimeDesc)));
  });

  t.test('attempts spread over weeks: pages cross the time windows in both directions', async (t) => {
    // Partitions for the last 12 days; older and far-future rows sit in the default partition.
    await ensurePartitions(db, new Date(), { behindDays: 12 });
    const now = Date.now();
    const H = 3_600_000;
    const offsets = [-40 * 24, -10 * 24, -8 * 24 - 1, -8 * 24 + 1, -7.5 * 24, -2 * 24, -36, -24.01, -24, -23.99, -12, -1, 0, 72, 400 * 24];
    for (const [i, h] of offsets.entries()) {
      await insertAttempt(db, {
        tenant_id: 'acme',
        destination_id: 'd3',
        event_id: `evt_${String(i % 30).padStart(2, '0')}`,
        topic: 'order.paid',
        status: i % 3 ? 'success' : 'failed',
        attempt_number: 1,
        time: new Date(now + h * H),
      });
    }
    const url = '/api/v1/tenants/acme/destinations/d3/attempts';
    const all = ids(acmeAttempts('d3'));
    t.equal(all.length, offsets.length);
    for (const limit of [1, 2, 4, 100]) {
      const desc = await allPages(call, `${url}?limit=${limit}`);
      t.same(
        desc.flatMap((p) => ids(p.models)),
        all,
        `newest first, ${limit} a page`,
      );
      const asc = await allPages(call, `${url}?limit=${limit}&dir=asc`);
      t.same(
        asc.flatMap((p) => ids(p.models)),
        [...all].reverse(),
        `oldest first, ${limit} a page`,
      );
      // Back from the last page, in both directions.
      for (const pages of [desc, asc]) {
        let prev = pages.at(-1).pagination.prev;
        const back: string[] = [];
        while (prev) {
          const r = await call('GET', `${url}?limit=${limit}&prev=${encodeURIComponent(prev)}`);
          back.unshift(...ids(r.body.models));
          prev = r.body.pagination.prev;
        }
        t.same(
          [...back, ...ids(pages.at(-1).models)],
          pages.flatMap((p) => ids(p.models)),
          `back again, ${limit} a page`,
        );
      }
    }
    const within = (from: number, to: number) =>
      ids(acmeAttempts('d3').filter((a) => a.time.getTime() >= now + from * H && a.time.getTime() < now + to * H));
    for (const [from, to] of [
      [-9 * 24, -24],
      [-100 * 24, -7 * 24],
      [-30, 1],
      [50, 500 * 24],
    ] as [number, number][]) {
      const q = `time[gte]=${encodeURIComponent(new Date(now + from * H).toISOString())}&time[lt]=${encodeURIComponent(new Date(now + to * H).toISOString())}`;
      for (const dir of ['asc', 'desc']) {
        const pages = await allPages(call, `${url}?limit=2&dir=${dir}&${q}`);
        const want = within(from, to);
        t.same(
          pages.flatMap((p) => ids(p.models)),
          dir === 'asc' ? want.reverse() : want,
          `${dir} within [${from} h, ${to} h)`,
        );
      }
    }
    const failed = await allPages(call, `${url}?limit=3&status=failed`);
    t.same(
      failed.flatMap((p) => ids(p.models)),
      ids(acmeAttempts('d3').filter((a) => a.status === 'failed')),
    );
  });

  t.test('a delivery stored outside its event partition is still found', async (t) => {
    // The writer keeps created_at = received_at; a row that breaks this is found by the fallback.
    await db('deliveries')
      .where({ tenant_id: 'acme', event_id: 'evt_04', destination_id: 'd1' })
      .update({ created_at: new Date(BASE - 86_400_000 * 3), status: 'success', successful_at: new Date(BASE) });
    const r = await call('GET', '/api/v1/acme/events/evt_04');
    t.equal(r.body.successful_at, new Date(BASE).toISOString());
    const listed = (await call('GET', '/api/v1/acme/events?limit=1000')).body.models.find((e: { id: string }) => e.id === 'evt_04');
    t.equal(listed.successful_at, new Date(BASE).toISOString());
  });

  t.test('status=scheduled: events with a delivery pending and not due yet', async (t) => {
    const now = Date.now();
    // Pending and ahead, pending and due, canceled; beside them, events the per-event status must
    // read past a destination disabled when it was routed (a `skipped` delivery, nothing to cancel):
    // canceled with one, canceled and since due, and one whose only delivery was skipped (nothing
    // pending: not scheduled).
    for (const [id, deliverAt, deliveries] of [
      ['sch_future', now + 3_600_000, [['g1', 'pending']]],
      ['sch_due', now - 60_000, [['g1', 'pending']]],
      ['sch_canceled', now + 3_600_000, [['g1', 'canceled']]],
      [
        'sch_canceled_skip',
        now + 3_600_000,
        [
          ['g1', 'canceled'],
          ['g2', 'skipped'],
        ],
      ],
      ['sch_canceled_due', now - 60_000, [['g1', 'canceled']]],
      ['sch_all_skipped', now + 3_600_000, [['g2', 'skipped']]],
    ] as const) {
      await insertEvent(
        db,
        plainEvent(
          'globex',
          id,
          new Date(now - 1000),
          deliveries.map(([d]) => d),
        ),
        deliveries.map(([destination_id, status]) => ({ destination_id, status: status as Del['status'], successful_at: null })),
      );
      await db('events')
        .where({ tenant_id: 'globex', id })
        .update({ deliver_at: new Date(deliverAt) });
    }
    const listed = async (url: string) => {
      const r = await call('GET', url);
      t.equal(r.status, 200, url);
      return (r.body.models as Array<{ id: string; status?: string }>).filter((m) => m.id.startsWith('sch_'));
    };
    t.same(
      (await listed('/api/v1/globex/events?status=scheduled')).map((m) => m.id),
      ['sch_future'],
      'the tenant listing: pending and not due',
    );
    const scoped = await listed('/api/v1/globex/destination/g1/events?status=scheduled');
    t.same(
      scoped.map((m) => [m.id, m.status]),
      [['sch_future', 'scheduled']],
      'scoped to the destination, listed scheduled',
    );
    t.same(
      (await listed('/api/v1/events?status=scheduled')).map((m) => m.id),
      ['sch_future'],
      'admin, every tenant',
    );
    t.same(
      (await listed('/api/v1/events?status=scheduled&tenant_id=globex&tenant_id=acme')).map((m) => m.id),
      ['sch_future'],
      'admin, tenants named',
    );
    t.same(
      (await listed('/api/v1/globex/events?status=scheduled,canceled')).map((m) => m.id).sort(),
      ['sch_canceled', 'sch_canceled_due', 'sch_canceled_skip', 'sch_future'],
      'with another status: either',
    );
    t.same(
      (await listed('/api/v1/globex/destination/g1/events?status=scheduled&status=canceled')).map((m) => m.id).sort(),
      ['sch_canceled', 'sch_canceled_due', 'sch_canceled_skip', 'sch_future'],
      'scoped, with another status',
    );
    const statusOf = async (url: string) =>
      Object.fromEntries((await listed(url)).map((m) => [m.id, m.status])) as Record<string, string | undefined>;
    t.same(
      await statusOf('/api/v1/globex/events?status=scheduled,canceled'),
      { sch_future: 'scheduled', sch_canceled: 'canceled', sch_canceled_skip: 'canceled', sch_canceled_due: 'canceled' },
      'per event: canceled once every delivery is (a skipped one has none to cancel), also once due; not scheduled',
    );
    for (const id of ['sch_canceled', 'sch_canceled_skip', 'sch_canceled_due'])
      t.equal((await call('GET', `/api/v1/globex/events/${id}`)).body.status, 'canceled', `${id}: one event, the same`);
    t.equal((await call('GET', '/api/v1/globex/events/sch_all_skipped')).body.status, undefined, 'nothing pending: not scheduled');
    t.equal((await call('GET', '/api/v1/globex/events/sch_future')).body.status, 'scheduled', 'pending and ahead: scheduled');
    const bad = await call('GET', '/api/v1/globex/events?status=pending');
    t.equal(bad.status, 422);
    t.match(JSON.stringify(bad.body), /success, failed, canceled, scheduled/, 'the statuses an event listing takes');
    const attempts = await call('GET', '/api/v1/globex/attempts?status=scheduled');
    t.equal(attempts.status, 422, 'attempts have no scheduled status');
  });

  t.test('events: the id filter, one id or several, in every form', async (t) => {
    const listed = async (url: string, token?: string) => {
      const r = await call('GET', url, undefined, token);
      t.equal(r.status, 200, url);
      return (r.body.models as { tenant_id: string; id: string }[]).map((e) => `${e.tenant_id}/${e.id}`);
    };
    const acme = (...list: string[]) =>
      acmeEvents()
        .filter((e) => list.includes(e.id))
        .map((e) => `acme/${e.id}`);
    t.same(await listed('/api/v1/acme/events?id=evt_05'), ['acme/evt_05'], 'one id');
    for (const q of ['id=evt_05&id=evt_17', 'id[]=evt_05&id[]=evt_17', 'id[0]=evt_05&id[1]=evt_17', 'id=evt_05,evt_17']) {
      t.same(await listed(`/api/v1/tenants/acme/events?${q}`), acme('evt_05', 'evt_17'), `several: ${q}`);
    }
    t.same(await listed('/api/v1/acme/events?id=evt_05&id=nope'), ['acme/evt_05'], 'an unknown id adds nothing');
    t.same(await listed('/api/v1/acme/events?id=nope'), [], 'no such event: nothing');
    t.same(await listed('/api/v1/acme/events?id=evt_05&topic=order.paid'), [], 'with the other filters: all must hold');
    // Through the deliveries (a destination or status filter) as well as straight from events.
    t.same(await listed('/api/v1/acme/events?id=evt_03,evt_04&destination_id=d2'), ['acme/evt_03'], 'with destination_id');
    t.same(await listed('/api/v1/acme/events?id=evt_08,evt_09&status=failed'), ['acme/evt_08'], 'with status');
    // Event ids are per tenant: the admin key without a tenant sees both tenants' evt_01.
    t.same((await listed('/api/v1/events?id=evt_01')).sort(), ['acme/evt_01', 'globex/evt_01'], 'admin, every tenant');
    t.same(await listed('/api/v1/events?id=evt_01&tenant_id=globex'), ['globex/evt_01'], 'admin, one tenant');
    t.same(await listed('/api/v1/events?id=evt_01', acmeToken), ['acme/evt_01'], 'tenant token: its own only');

    const bad = await call('GET', '/api/v1/acme/events?id=no%20spaces&status=bogus');
    t.equal(bad.status, 422);
    t.equal(bad.body.code, 'VALIDATION_FAILED');
    t.same(bad.body.problems.map((p: { path: string }) => p.path).sort(), ['query.id', 'query.status'], 'every problem at once');
    t.match(
      bad.body.problems.find((p: { path: string }) => p.path === 'query.id'),
      { message: /1-255 characters.*"no spaces"/ },
    );
    t.equal((await call('GET', `/api/v1/acme/events?id=${'x'.repeat(256)}`)).status, 422, 'too long for an id');
    // The destination's listing names its own event by path: no id filter there.
    const scoped = await call('GET', '/api/v1/acme/destination/d1/events?id=evt_05');
    t.equal(scoped.status, 422);
    t.match(scoped.body.problems, [{ path: 'query.id', message: 'is not a parameter of this route' }]);
  });

  t.test('one attempt: tenant_id narrows the look-up as on one event', async (t) => {
    const mine = acmeAttempts('d1')[0] as Att;
    const theirs = fx.attempts.find((a) => a.tenant_id === 'globex') as Att;
    const get = (url: string, token?: string) => call('GET', url, undefined, token);
    t.equal((await get(`/api/v1/attempts/${theirs.id}?tenant_id=globex`)).body.id, theirs.id, 'its tenant: found');
    t.equal((await get(`/api/v1/attempts/${theirs.id}?tenant_id=acme,globex`)).body.id, theirs.id, 'among several');
    t.equal((await get(`/api/v1/attempts/${mine.id}?tenant_id[]=acme&include=event`)).body.event?.id, mine.event_id, 'with include');
    for (const q of ['tenant_id=acme', 'tenant_id[0]=acme', 'tenant_id=nobody']) {
      const r = await get(`/api/v1/attempts/${theirs.id}?${q}`);
      t.equal(r.status, 404, q);
      t.equal(r.body.code, 'ATTEMPT_NOT_FOUND', `another tenant's attempt is not found: ${q}`);
    }
    // A tenant token may name its own tenant only, as on GET /events/{event_id}.
    t.equal((await get(`/api/v1/attempts/${mine.id}?tenant_id=acme`, acmeToken)).body.id, mine.id, 'tenant token, its own tenant');
    const other = await get(`/api/v1/attempts/${mine.id}?tenant_id=globex`, acmeToken);
    t.equal(other.status, 403, 'tenant token naming another tenant');
    t.equal((await get('/api/v1/events/evt_01?tenant_id=globex', acmeToken)).status, other.status, 'as one event answers');
    // Beside a tenant in the path, tenant_id may only name it again: another is refused, not ignored.
    t.equal((await get(`/api/v1/tenants/acme/attempts/${mine.id}?tenant_id=acme`)).body.id, mine.id, 'the path tenant again');
    for (const url of [
      `/api/v1/tenants/acme/attempts/${mine.id}?tenant_id=globex`,
      '/api/v1/tenants/acme/events/evt_05?tenant_id=globex',
    ]) {
      const r = await get(url);
      t.equal(r.status, 422, `admin key, another tenant than the path's: ${url}`);
      t.match(r.body.problems, [{ path: 'query.tenant_id', message: /must be the tenant of the path \(acme\)/ }]);
      t.equal((await get(url, acmeToken)).status, 403, `tenant token: ${url}`);
    }
    // Not on the destination's own attempt route, whose path names the tenant.
    const scoped = await get(`/api/v1/tenants/acme/destinations/d1/attempts/${mine.id}?tenant_id=acme`);
    t.equal(scoped.status, 422);
    t.match(scoped.body.problems, [{ path: 'query.tenant_id', message: 'is not a parameter of this route' }]);
  });

  t.test('attempts: the destination_type filter, by either service name', async (t) => {
    t.equal((await call('PUT', '/api/v1/tenants/typed')).status, 201);
    const q1 = await call('POST', '/api/v1/tenants/typed/destinations', {
      id: 'q1',
      type: 'aws_sqs',
      topics: '*',
      config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/1/q' },
      credentials: { key: 'AKIA1', secret: 'sqs-secret-1234' },
    });
    t.equal(q1.status, 201);
    const w1 = await call('POST', '/api/v1/tenants/typed/destinations', {
      id: 'w1',
      type: 'webhook',
      topics: '*',
      config: { url: 'https://example.com/hook' },
    });
    t.equal(w1.status, 201);
    for (const [i, destination_id] of ['q1', 'w1', 'q1', 'w1', 'q1'].entries()) {
      await insertAttempt(db, {
        tenant_id: 'typed',
        destination_id,
        event_id: `typed_${i}`,
        topic: 'user.created',
        status: i === 2 ? 'failed' : 'success',
        attempt_number: 1,
      });
    }
    const typedToken: string = (await call('GET', '/api/v1/tenants/typed/token')).body.token;
    const typeOf: Record<string, string> = { q1: 'sqs' }; // every other destination here is a webhook
    const want = (types: string[], pred: (a: Att) => boolean = () => true) =>
      ids(fx.attempts.filter((a) => types.includes(typeOf[a.destination_id] ?? 'webhook') && pred(a)).sort(byTimeDesc));
    const inTyped = (a: Att) => a.tenant_id === 'typed';
    const listed = async (url: string, token?: string) => {
      const pages = await allPages(call, url, token);
      return pages.flatMap((p) => ids(p.models));
    };

    const checkAll = async (t: Test, how: string) => {
      t.same(await listed('/api/v1/typed/attempts?destination_type=sqs'), want(['sqs'], inTyped), `${how}: our name`);
      t.same(await listed('/api/v1/tenants/typed/attempts?destination_type=aws_sqs'), want(['sqs'], inTyped), `${how}: the other name`);
      t.same(await listed('/api/v1/typed/attempts?destination_type=webhook'), want(['webhook'], inTyped), `${how}: webhook`);
      for (const q of [
        'destination_type=sqs&destination_type=webhook',
        'destination_type[]=aws_sqs&destination_type[]=webhook',
        'destination_type[0]=webhook&destination_type[1]=sqs',
        'destination_type=webhook,aws_sqs',
      ])
        t.same(await listed(`/api/v1/typed/attempts?${q}`), want(['sqs', 'webhook'], inTyped), `${how}: several, ${q}`);
      t.same(await listed('/api/v1/typed/attempts?destination_type=kinesis'), [], `${how}: no destination of that type`);
      t.same(
        await listed('/api/v1/typed/attempts?destination_type=sqs&status=failed'),
        want(['sqs'], (a) => inTyped(a) && a.status === 'failed'),
        `${how}: with status`,
      );
      t.same(await listed('/api/v1/typed/attempts?destination_type=sqs&destination_id=w1'), [], `${how}: with another destination`);
      t.same(
        await listed('/api/v1/typed/attempts?destination_type=aws_sqs&event_id=typed_0,typed_1'),
        want(['sqs'], (a) => inTyped(a) && a.event_id === 'typed_0'),
        `${how}: with event_id`,
      );
      // The admin key across tenants: acme's and globex's destinations are webhooks.
      t.same(await listed('/api/v1/attempts?destination_type=aws_sqs&limit=2'), want(['sqs']), `${how}: admin, every tenant`);
      t.same(await listed('/api/v1/attempts?destination_type=webhook&limit=50'), want(['webhook']), `${how}: admin, webhooks`);
      t.same(await listed('/api/v1/attempts?destination_type=sqs&tenant_id=acme'), [], `${how}: admin, a tenant without one`);
      t.same(await listed('/api/v1/attempts?destination_type=sqs', typedToken), want(['sqs'], inTyped), `${how}: tenant token`);
      t.same(await listed('/api/v1/attempts?destination_type=sqs', acmeToken), [], `${how}: another tenant's token`);
    };
    t.ok(want(['sqs'], inTyped).length === 3 && want(['webhook'], inTyped).length === 2, 'both types have attempts');
    await checkAll(t, 'few destinations');
    // More destinations of a type than one branch each: the type becomes a recheck per attempt.
    await db('destinations').insert(
      Array.from({ length: 60 }, (_, i) => ({
        tenant_id: 'typed',
        id: `w_more_${i}`,
        type: 'webhook',
        topics: ['*'],
        config: JSON.stringify({ url: 'https://example.com/hook' }),
      })),
    );
    await checkAll(t, 'many destinations');

    const bad = await call('GET', '/api/v1/typed/attempts?destination_type=aws_sqs,carrier_pigeon&status=maybe');
    t.equal(bad.status, 422);
    t.equal(bad.body.code, 'VALIDATION_FAILED');
    t.same(
      bad.body.problems.map((p: { path: string }) => p.path).sort(),
      ['query.destination_type', 'query.status'],
      'every problem at once',
    );
    t.match(
      bad.body.problems.find((p: { path: string }) => p.path === 'query.destination_type'),
      { message: '"carrier_pigeon" is not a destination type' },
    );
    t.equal((await call('GET', '/api/v1/attempts?destination_type=SQS')).status, 422, 'names are exact');
    // A destination's own listing has one type already: the SDK sends none there.
    const scoped = await call('GET', '/api/v1/typed/destinations/q1/attempts?destination_type=sqs');
    t.equal(scoped.status, 422);
    t.match(scoped.body.problems, [{ path: 'query.destination_type', message: 'is not a parameter of this route' }]);

    // Attempts know no type of their own: a deleted destination's attempts match none.
    t.equal((await call('DELETE', '/api/v1/tenants/typed/destinations/q1')).status, 200);
    t.same(await listed('/api/v1/typed/attempts?destination_type=sqs'), [], 'deleted: no longer of a type');
    t.same(await listed('/api/v1/typed/attempts?destination_id=q1'), want(['sqs'], inTyped), 'still listed by destination_id');
  });
  t.test(
    'a retry of an event id two tenants have: the tenant with the destination, 404 when none has it, else 422 naming tenant_id',
    async (t) => {
      const at = new Date(Date.now() - 60_000);
      await insertEvent(db, plainEvent('acme', 'twin', at, ['d1']), []);
      await insertEvent(db, plainEvent('globex', 'twin', at, ['g1']), []);
      const retry = (body: Record<string, string>) => call('POST', '/api/v1/retry', { event_id: 'twin', ...body });
      t.same((await retry({ destination_id: 'g1' })).status, 202, "only globex has g1: globex's event");
      for (const r of [
        await retry({ destination_id: 'g1', tenant_id: 'nobody' }),
        await call('POST', '/api/v1/tenants/nobody/destination/g1/events/twin/retry'),
      ]) {
        t.equal(r.status, 404, 'a tenant that does not exist');
        t.equal(r.body.code, 'TENANT_NOT_FOUND');
      }
      const none = await retry({ destination_id: 'nope' });
      t.equal(none.status, 404, 'neither has the destination');
      t.equal(none.body.code, 'DESTINATION_NOT_FOUND');
      for (const tenant of ['acme', 'globex'])
        await call('POST', `/api/v1/tenants/${tenant}/destinations`, {
          id: 'both',
          type: 'webhook',
          topics: '*',
          config: { url: 'https://example.com/b' },
        });
      const ambiguous = await retry({ destination_id: 'both' });
      t.equal(ambiguous.status, 422);
      t.same(ambiguous.body.problems, [
        { path: 'body.tenant_id', message: 'is required: several tenants have this event id and this destination' },
      ]);
      t.same(
        ambiguous.body.data,
        ['body.tenant_id is required: several tenants have this event id and this destination'],
        'data as every 422 has it',
      );
      t.equal((await retry({ destination_id: 'both', tenant_id: 'acme' })).status, 202, 'named: found');
    },
  );
});
