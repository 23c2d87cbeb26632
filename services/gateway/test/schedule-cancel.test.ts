// POST .../events/{id}/cancel: a scheduled event is cancelable until a second before deliver_at, on
// the database's clock (a sender reads the cancellation at deliver_at: one answered 200 is stored by
// then); canceling again is a no-op, also once the event is due. On Postgres and on PGlite.
import t, { type Test } from 'tap';
import type { Knex } from '@switchyard/shared/db/index.ts';
import { buildEmbeddedTestApp, buildTestApp, type TestApp } from './helpers.ts';

/** An event of `tenant` routed to `d1`, due `dueInMs` from now (null: not scheduled), its delivery pending. */
async function scheduledEvent(db: Knex, tenant: string, id: string, dueInMs: number | null) {
  const now = new Date();
  await db('events').insert({
    tenant_id: tenant,
    id,
    topic: 'user.created',
    time: now,
    data: '{}',
    eligible_for_retry: true,
    received_at: now,
    matched_destination_ids: ['d1'],
    deliver_at: dueInMs === null ? null : new Date(now.getTime() + dueInMs),
  });
  await db('deliveries').insert({
    tenant_id: tenant,
    event_id: id,
    destination_id: 'd1',
    topic: 'user.created',
    event_time: now,
    created_at: now,
    status: 'pending',
    attempts: 0,
  });
}

async function checkCancel(t: Test, { call, db }: TestApp) {
  t.equal((await call('PUT', '/api/v1/tenants/acme')).status, 201);
  const cancel = (id: string) => call('POST', `/api/v1/tenants/acme/events/${id}/cancel`);
  const deliveryOf = async (id: string) => (await db('deliveries').where({ tenant_id: 'acme', event_id: id }).first('status'))?.status;

  await scheduledEvent(db, 'acme', 'later', 60_000);
  const first = await cancel('later');
  t.same([first.status, first.body], [200, { success: true }], 'a minute ahead: canceled');
  t.equal(await deliveryOf('later'), 'canceled', 'its delivery listed canceled at once');
  t.equal((await cancel('later')).status, 200, 'again: a no-op');
  await db('events')
    .where({ tenant_id: 'acme', id: 'later' })
    .update({ deliver_at: new Date(Date.now() - 1000) });
  t.equal((await cancel('later')).status, 200, 'again once due: still a no-op, not 409 (it was canceled)');

  await scheduledEvent(db, 'acme', 'soon', 500);
  const soon = await cancel('soon');
  t.equal(soon.status, 409, 'due within a second: refused, its deliveries may be under way');
  t.equal(soon.body.code, 'EVENT_NOT_SCHEDULED');
  t.equal(await deliveryOf('soon'), 'pending', 'and nothing changed');
  t.equal((await db('event_cancellations').where({ tenant_id: 'acme', event_id: 'soon' })).length, 0, 'no cancellation stored');

  await scheduledEvent(db, 'acme', 'now', null);
  t.equal((await cancel('now')).status, 409, 'never scheduled: 409');
  t.equal((await cancel('nope')).status, 404, 'unknown: 404');
}

t.test('cancel: until a second before deliver_at; again is a no-op (Postgres)', async (t) => checkCancel(t, await buildTestApp(t)));
t.test('cancel: until a second before deliver_at; again is a no-op (PGlite, embedded mode)', async (t) =>
  checkCancel(t, await buildEmbeddedTestApp(t)),
);
