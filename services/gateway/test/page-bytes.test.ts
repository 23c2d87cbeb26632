// Listings that return event data stop a page at API_PAGE_MAX_BYTES of payload (docs/queries.md,
// "Paging"): fewer than `limit` items, a `next` right after the last one, every item exactly once
// whichever way the pages are walked; an event larger than the bound comes back alone; attempts
// with include=event count their events' metadata only; listings without events are not bounded.
// The same walks run on Postgres and on PGlite (embedded mode).
import t, { type Test } from 'tap';
import type { Knex } from '@switchyard/shared/db/index.ts';
import { PipelineStore } from '@switchyard/shared/db/stores/pipeline.ts';
import { uuidv7 } from '@switchyard/shared/ids.ts';
import type { AttemptRecord, RoutedRecord } from '@switchyard/shared/model/index.ts';
import { buildEmbeddedTestApp, buildTestApp, type TestApp } from './helpers.ts';

const BOUND = 4096;
const BIG = 10_000;
/** Payload sizes (the `pad` of each event's data), oldest first: they cross the bound every few events. */
const PADS = [300, 1500, 700, 2600, 100, 900, BIG, 1200, 50, 3000, 400, 800, 2000, 150, 1700, 600, 2200, 90, 1100, 500, 1900, 250];

interface Seeded {
  destination: string;
  /** Event ids, newest event time first, and each one's payload bytes (data and metadata as compact JSON). */
  events: string[];
  eventBytes: Map<string, number>;
  /** Attempt ids, newest first, and the event each belongs to. */
  attempts: string[];
  attemptEvent: Map<string, string>;
}

/**
 * One tenant, one destination; events written by the pipeline's own writer, one attempt each. By
 * default the events' data carries the pads; `bigMetadata` puts them in the metadata instead.
 */
async function seed(app: TestApp, tenant = 'acme', bigMetadata = false): Promise<Seeded> {
  const { call, db } = app;
  if ((await call('PUT', `/api/v1/tenants/${tenant}`)).status !== 201) throw new Error('tenant');
  const d = await call('POST', `/api/v1/tenants/${tenant}/destinations`, {
    type: 'webhook',
    topics: '*',
    config: { url: 'https://example.com/hook' },
  });
  if (d.status !== 201) throw new Error(`destination: ${JSON.stringify(d.body)}`);
  const destination: string = d.body.id;
  const base = Date.now() - 3_600_000;
  const routed: RoutedRecord[] = [];
  const eventBytes = new Map<string, number>();
  PADS.forEach((pad, i) => {
    const id = `${tenant === 'acme' ? 'evt' : tenant}_${String(i).padStart(2, '0')}`;
    const padding = 'é'.repeat(pad / 2); // two bytes a character in UTF-8
    const data: Record<string, string | number> = bigMetadata ? { i } : { i, pad: padding };
    const metadata = bigMetadata ? { pad: padding } : i % 2 ? { source: 'test' } : null;
    eventBytes.set(id, Buffer.byteLength(JSON.stringify(data)) + (metadata ? Buffer.byteLength(JSON.stringify(metadata)) : 0));
    const time = new Date(base + i * 60_000).toISOString();
    routed.push({
      event: { id, tenant_id: tenant, topic: 'user.created', time, eligible_for_retry: true, metadata, data, received_at: time },
      matched_destination_ids: [destination],
      skipped_destination_ids: [],
    });
  });
  const store = new PipelineStore(db);
  await store.storeRouted(routed);
  const attempts: AttemptRecord[] = routed.map(({ event: e }, i) => {
    const at = Date.parse(e.time) + 1000;
    return {
      id: uuidv7(at),
      tenant_id: tenant,
      destination_id: destination,
      destination_type: 'webhook',
      event_id: e.id,
      topic: e.topic,
      event_time: e.time,
      event_received_at: e.received_at as string,
      status: i % 3 ? 'success' : 'failed',
      code: i % 3 ? '200' : '503',
      response_data: { status: i % 3 ? 200 : 503 },
      attempt_number: 1,
      manual: false,
      time: new Date(at).toISOString(),
      duration_ms: 5,
      final: true,
    };
  });
  await store.storeAttempts(attempts);
  return {
    destination,
    events: routed.map((r) => r.event.id).reverse(),
    eventBytes,
    attempts: attempts.map((a) => a.id).reverse(),
    attemptEvent: new Map(attempts.map((a) => [a.id, a.event_id])),
  };
}

interface Page {
  models: any[];
  pagination: { order_by: string; dir: string; limit: number; next: string | null; prev: string | null };
}

async function get(call: TestApp['call'], url: string): Promise<Page> {
  const r = await call('GET', url);
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const withParam = (url: string, name: string, value: string) =>
  `${url}${url.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(value)}`;

/** Follows `next` from the first page, then `prev` back from the last; returns both walks' pages in the order read. */
async function walk(call: TestApp['call'], url: string): Promise<{ forward: Page[]; backward: Page[] }> {
  const forward: Page[] = [await get(call, url)];
  for (let next = forward[0]?.pagination.next; next; next = forward.at(-1)?.pagination.next) {
    if (forward.length > 50) throw new Error('paging does not end');
    forward.push(await get(call, withParam(url, 'next', next)));
  }
  const backward: Page[] = [forward.at(-1) as Page];
  for (let prev = backward[0]?.pagination.prev; prev; prev = backward.at(-1)?.pagination.prev) {
    if (backward.length > 50) throw new Error('paging does not end');
    backward.push(await get(call, withParam(url, 'prev', prev)));
  }
  return { forward, backward };
}

/**
 * Checks the pages of a walk, in the order they were read (`backward`: by prev, each page then filled
 * from its end), against every item of the listing: each item exactly once, in order; no page over
 * `limit`; every page but the last read ends by `limit` or by the bound: the items read before its
 * last one read hold less than the bound, all of them at least the bound; `limit` echoed.
 */
function checkPages(
  t: Test,
  pages: Page[],
  backward: boolean,
  want: string[],
  size: (id: string) => number,
  limit: number,
  bounded: boolean,
) {
  t.same(
    (backward ? [...pages].reverse() : pages).flatMap((p) => p.models.map((m) => m.id)),
    want,
    'every item once, in order',
  );
  pages.forEach((p, i) => {
    const read = backward ? [...p.models].reverse() : p.models;
    const sizes = read.map((m) => size(m.id));
    const before = sizes.slice(0, -1).reduce((a, b) => a + b, 0);
    const all = before + (sizes.at(-1) ?? 0);
    const name = `page ${i}${backward ? ' back' : ''}`;
    t.equal(p.pagination.limit, limit, `${name}: limit echoed`);
    t.ok(p.models.length >= 1 && p.models.length <= limit, `${name}: 1 to limit items (${p.models.length})`);
    if (i === pages.length - 1) return;
    if (!bounded) {
      t.equal(p.models.length, limit, `${name}: full, no byte bound`);
      return;
    }
    t.ok(before < BOUND, `${name}: the items before its last hold ${before} bytes, under the bound`);
    if (p.models.length < limit) t.ok(all >= BOUND, `${name}: ends short of limit only at the bound (${all} bytes)`);
  });
}

function checkWalk(t: Test, w: { forward: Page[]; backward: Page[] }, want: string[], size: (id: string) => number, limit: number) {
  t.ok(w.forward.length > 2, `several pages (${w.forward.length})`);
  t.ok(
    w.forward.some((p, i) => i < w.forward.length - 1 && p.models.length < limit),
    'some page holds fewer than limit items',
  );
  t.equal(w.forward[0]?.pagination.prev, null, 'no prev on the first page');
  t.equal(w.forward.at(-1)?.pagination.next, null, 'no next on the last page');
  checkPages(t, w.forward, false, want, size, limit, true);
  t.equal(w.backward.at(-1)?.pagination.prev, null, 'walking back ends on a page without prev');
  // The last page, where walking back starts, was read forwards.
  checkPages(t, w.backward.slice(1), true, want.slice(0, want.length - (w.backward[0]?.models.length ?? 0)), size, limit, true);
}

/** The payload bytes of stored events as the database measures legacy rows (jsonb text). */
async function storedBytes(db: Knex): Promise<Map<string, number>> {
  const r = await db.raw('SELECT id, octet_length(data::text) + coalesce(octet_length(metadata::text), 0) AS n FROM events');
  return new Map((r.rows as { id: string; n: number }[]).map((x) => [x.id, Number(x.n)]));
}

for (const backend of ['Postgres', 'PGlite'] as const) {
  t.test(`${backend}: a byte bound per page of listings that return event data`, async (t) => {
    const app =
      backend === 'Postgres'
        ? await buildTestApp(t, { API_PAGE_MAX_BYTES: String(BOUND) })
        : await buildEmbeddedTestApp(t, { API_PAGE_MAX_BYTES: String(BOUND) });
    const { call, db } = app;
    const s = await seed(app);
    const eventSize = (id: string) => s.eventBytes.get(id) as number;
    const attemptSize = (id: string) => eventSize(s.attemptEvent.get(id) as string);
    const ascending = [...s.events].reverse();

    t.test('the writer stores each event its payload bytes', async (t) => {
      const rows = (await db('events').select('id', 'payload_bytes')) as { id: string; payload_bytes: number }[];
      t.same(new Map(rows.map((r) => [r.id, r.payload_bytes])), s.eventBytes);
    });

    t.test('events of a tenant (read directly, cut in the statement)', async (t) => {
      checkWalk(t, await walk(call, '/api/v1/tenants/acme/events?limit=100'), s.events, eventSize, 100);
      checkWalk(t, await walk(call, '/api/v1/tenants/acme/events?limit=5&dir=asc'), ascending, eventSize, 5);
      const first = await get(call, '/api/v1/tenants/acme/events?limit=100');
      t.ok(first.models.length < 100 && first.pagination.next, 'fewer than limit items and a next cursor');
      t.same(first.models[0].data, { i: PADS.length - 1, pad: 'é'.repeat((PADS.at(-1) as number) / 2) }, 'the data comes along');
    });

    t.test('events of a destination (read through deliveries, cut before the data is read)', async (t) => {
      checkWalk(t, await walk(call, `/api/v1/tenants/acme/destination/${s.destination}/events?limit=100`), s.events, eventSize, 100);
      checkWalk(
        t,
        await walk(call, `/api/v1/tenants/acme/events?destination_id=${s.destination}&limit=4&dir=asc`),
        ascending,
        eventSize,
        4,
      );
      const page = await get(call, `/api/v1/tenants/acme/destination/${s.destination}/events?limit=100`);
      t.equal(page.models[0].data.i, PADS.length - 1, 'the data comes along');
      t.equal(page.models[0].status, (PADS.length - 1) % 3 ? 'success' : 'failed', 'with its delivery status');
    });

    t.test('attempts with include=event.data', async (t) => {
      checkWalk(
        t,
        await walk(call, `/api/v1/tenants/acme/destinations/${s.destination}/attempts?include=event.data`),
        s.attempts,
        attemptSize,
        100,
      );
      checkWalk(
        t,
        await walk(call, '/api/v1/tenants/acme/attempts?include=event.data&limit=6&dir=asc'),
        [...s.attempts].reverse(),
        attemptSize,
        6,
      );
      const page = await get(call, '/api/v1/tenants/acme/attempts?include=event.data&include=destination');
      t.ok(
        page.models.every((m) => m.event?.data?.i !== undefined && m.destination?.id === s.destination),
        'every attempt carries its event with data',
      );
    });

    t.test('an event larger than the bound comes back alone, with next and prev cursors', async (t) => {
      const big = `evt_${String(PADS.indexOf(BIG)).padStart(2, '0')}`;
      const at = s.events.indexOf(big);
      t.ok(eventSize(big) > BOUND && at > 0 && at < s.events.length - 1, 'it has items on both sides');
      // A cursor right after the event newer than it, from a walk one item at a time.
      const ones = (await walk(call, '/api/v1/tenants/acme/events?limit=1')).forward;
      const url = '/api/v1/tenants/acme/events?limit=100';
      const alone = await get(call, withParam(url, 'next', ones[at - 1]?.pagination.next as string));
      t.same(
        alone.models.map((m) => m.id),
        [big],
        'alone on its page',
      );
      t.ok(alone.pagination.next && alone.pagination.prev, 'with both cursors');
      t.equal(
        (await get(call, withParam(url, 'next', alone.pagination.next as string))).models[0].id,
        s.events[at + 1],
        'next goes on right after it',
      );
      t.equal(
        (await get(call, withParam(url, 'prev', alone.pagination.prev as string))).models.at(-1).id,
        s.events[at - 1],
        'prev goes back right before it',
      );
      // The same through attempts: its attempt is the only one on a page of include=event.data.
      const attempt = s.attempts[at] as string;
      t.equal(s.attemptEvent.get(attempt), big);
      const aUrl = '/api/v1/tenants/acme/attempts?include=event.data';
      const aOnes = (await walk(call, `${aUrl}&limit=1`)).forward;
      const aAlone = await get(call, withParam(aUrl, 'next', aOnes[at - 1]?.pagination.next as string));
      t.same(
        aAlone.models.map((m) => m.id),
        [attempt],
        'its attempt alone on a page',
      );
      t.ok(aAlone.pagination.next, 'with a next cursor');
      t.equal(aAlone.models[0].event.data.pad.length, BIG / 2, 'carrying the whole event');
    });

    t.test('without event data the bound does not apply', async (t) => {
      for (const url of [
        `/api/v1/tenants/acme/destinations/${s.destination}/attempts?limit=10`,
        '/api/v1/tenants/acme/attempts?limit=10&include=destination',
      ]) {
        const w = await walk(call, url);
        checkPages(t, w.forward, false, s.attempts, attemptSize, 10, false);
        const page = w.forward[0] as Page;
        t.equal(page.models.length, 10, `${url}: full pages`);
        t.ok(
          page.models.map((m) => attemptSize(m.id)).reduce((a, b) => a + b, 0) > BOUND,
          `${url}: although their events hold more than the bound`,
        );
      }
    });

    t.test('attempts with include=event: bounded by the metadata bytes of their events', async (t) => {
      // Large data, small metadata: the data is not embedded, so the pages stay full.
      const full = await walk(call, '/api/v1/tenants/acme/attempts?limit=10&include=event');
      checkPages(t, full.forward, false, s.attempts, attemptSize, 10, false);
      t.ok(
        full.forward[0]?.models.every((m) => m.event && m.event.data === undefined),
        'events embedded without their data',
      );
      // Large metadata: cut at the bound like event data, measured as the database prints it.
      const m = await seed(app, 'meta', true);
      const r = await db.raw(`SELECT id, coalesce(octet_length(metadata::text), 0) AS n FROM events WHERE tenant_id = 'meta'`);
      const metadataBytes = new Map((r.rows as { id: string; n: number }[]).map((x) => [x.id, Number(x.n)]));
      const size = (id: string) => metadataBytes.get(m.attemptEvent.get(id) as string) as number;
      checkWalk(t, await walk(call, `/api/v1/tenants/meta/destinations/${m.destination}/attempts?include=event`), m.attempts, size, 100);
      checkWalk(t, await walk(call, '/api/v1/tenants/meta/attempts?include=event&limit=6&dir=asc'), [...m.attempts].reverse(), size, 6);
      const page = await get(call, '/api/v1/tenants/meta/attempts?include=event');
      t.ok(
        page.models.every((a) => typeof a.event?.metadata?.pad === 'string' && a.event.data === undefined),
        'every attempt carries its event with metadata, without data',
      );
    });

    t.test('rows written before payload_bytes existed are measured in the query', async (t) => {
      await db.raw('UPDATE events SET payload_bytes = NULL');
      const stored = await storedBytes(db);
      const size = (id: string) => stored.get(id) as number;
      checkWalk(t, await walk(call, '/api/v1/tenants/acme/events?limit=100'), s.events, size, 100);
      checkWalk(t, await walk(call, `/api/v1/tenants/acme/destination/${s.destination}/events`), s.events, size, 100);
      checkWalk(
        t,
        await walk(call, '/api/v1/tenants/acme/attempts?include=event.data'),
        s.attempts,
        (id) => size(s.attemptEvent.get(id) as string),
        100,
      );
    });
  });
}
