// The destination as it is now: a deleted or disabled destination is canceled, a changed one used
// at once, and a change record drops what was read, even while the read is under way.
import t from 'tap';
import type { RoutableDestination } from '@switchyard/shared/db/stores/destinations.ts';
import type { AttemptRecord, DeliveryRecord, DestinationSnapshot } from '@switchyard/shared/model/index.ts';
import { DestinationState } from '../src/destination-state.ts';
import { createDeliveryHandler } from '../src/handler.ts';
import type { DeliveryInput, Sender } from '../src/sender.ts';

const snap = (url: string, id = 'd1', tenant = 't'): DestinationSnapshot => ({
  id,
  tenant_id: tenant,
  type: 'webhook',
  config: { url },
  credentials: null,
  delivery_metadata: null,
});

/** A store of destinations in memory, counting reads. */
function storeOf() {
  const rows = new Map<string, RoutableDestination>();
  const reads: string[] = [];
  const put = (s: DestinationSnapshot, disabled = false) =>
    rows.set(`${s.tenant_id}/${s.id}`, {
      id: s.id,
      topics: ['*'],
      filter: null,
      disabled_at: disabled ? '2026-01-01T00:00:00Z' : null,
      snapshot: s,
    });
  let gate: Promise<void> | null = null;
  const load = async (tenant: string, id: string) => {
    reads.push(`${tenant}/${id}`);
    const row = rows.get(`${tenant}/${id}`) ?? null;
    if (gate) await gate;
    return row;
  };
  return { rows, reads, put, load, hold: (p: Promise<void> | null) => (gate = p) };
}

t.test("a destination created again under its id is another: the old one's deliveries end deleted", async (t) => {
  const store = storeOf();
  const born = (at: string) => ({ ...snap('http://new'), created_at: at });
  store.put(born('2026-11-30T10:00:00.000Z'));
  const state = new DestinationState({ load: store.load, ttlMs: 60_000 });
  t.same(await state.current({ ...snap('http://old'), created_at: '2026-11-30T09:00:00.000Z' }), { canceled: 'destination_deleted' });
  t.same(
    await state.current({ ...snap('http://old'), created_at: '2026-11-30T10:00:00.000Z' }),
    { destination: born('2026-11-30T10:00:00.000Z') },
    'made for this one: delivered',
  );
  t.same(
    await state.current(snap('http://old')),
    { destination: born('2026-11-30T10:00:00.000Z') },
    'a delivery made before deliveries carried created_at: as before',
  );
});

t.test('reads once, serves from memory, and reads again after a change record', async (t) => {
  const store = storeOf();
  store.put(snap('http://a'));
  const state = new DestinationState({ load: store.load, ttlMs: 60_000 });
  t.same(await state.current(snap('http://old')), { destination: snap('http://a') }, 'the stored destination, not the snapshot');
  t.same(await state.current(snap('http://old')), { destination: snap('http://a') });
  t.equal(store.reads.length, 1, 'one read for both');
  store.put(snap('http://b'));
  state.changed({ tenant_id: 't', destination_id: 'd1' });
  t.same(await state.current(snap('http://old')), { destination: snap('http://b') }, 'the new URL after the change');
  store.put(snap('http://b'), true);
  state.changed({ tenant_id: 't', destination_id: 'd1' });
  t.same(await state.current(snap('http://old')), { canceled: 'destination_disabled' });
  store.put({ ...snap('http://b'), cancel_epoch: 2 });
  state.changed({ tenant_id: 't', destination_id: 'd1' });
  t.same(await state.current({ ...snap('http://old'), cancel_epoch: 1 }), { canceled: 'canceled' }, 'made before a cancel');
  t.same(await state.current({ ...snap('http://old'), cancel_epoch: 2 }), { destination: { ...snap('http://b'), cancel_epoch: 2 } });
  store.rows.clear();
  state.changed({ tenant_id: 't', destination_id: null });
  t.same(await state.current(snap('http://old')), { canceled: 'destination_deleted' }, 'a tenant-wide change drops its destinations');
  t.equal(store.reads.length, 5);
});

t.test('a change during a read discards that read; entries expire after ttlMs', async (t) => {
  const store = storeOf();
  store.put(snap('http://a'));
  let clock = 0;
  const state = new DestinationState({ load: store.load, ttlMs: 1000, now: () => clock });
  let open!: () => void;
  store.hold(new Promise<void>((r) => (open = r)));
  const first = state.current(snap('x'));
  const second = state.current(snap('x'));
  t.equal(store.reads.length, 1, 'concurrent deliveries share one read');
  store.put(snap('http://b'));
  state.changed({ tenant_id: 't', destination_id: 'd1' });
  store.hold(null);
  open();
  await Promise.all([first, second]);
  t.same(await state.current(snap('x')), { destination: snap('http://b') }, 'the read that raced the change was not kept');
  t.equal(store.reads.length, 2);
  clock = 999;
  await state.current(snap('x'));
  t.equal(store.reads.length, 2, 'fresh within ttlMs');
  clock = 2000;
  await state.current(snap('x'));
  t.equal(store.reads.length, 3, 'read again after it');
});

t.test('the handler delivers to the current destination, and cancels for a deleted or disabled one', async (t) => {
  const store = storeOf();
  const state = new DestinationState({ load: store.load, ttlMs: 60_000 });
  const seen: DeliveryInput[] = [];
  const sender: Sender = {
    deliver: async (input) => {
      seen.push(input);
      return { status: 'failed', code: '503', response_data: null, retryable: true };
    },
    close: async () => {},
  };
  const emitted: AttemptRecord[] = [];
  const retries: DeliveryRecord[] = [];
  const handle = createDeliveryHandler({
    senders: { webhook: sender },
    open: () => ({ credentials: {}, delivery_metadata: {} }),
    current: (s) => state.current(s),
    emitAttempt: async (a) => void emitted.push(a),
    scheduleRetry: async (d) => void retries.push(d),
    retry: { schedule: [], intervalSeconds: 5, maxRetries: 3, maxRetryAfterMs: 3_600_000 },
    timeoutMs: 1000,
  });
  const delivery: DeliveryRecord = {
    event: { id: 'e1', tenant_id: 't', topic: 'x', time: '2026-01-01T00:00:00Z', eligible_for_retry: true, metadata: null, data: {} },
    destination: snap('http://routed'),
    attempt_number: 2,
    manual: false,
  };
  store.put(snap('http://moved'));
  await (await handle(delivery)).write();
  t.equal(seen[0]?.destination.config.url, 'http://moved', 'the retry goes to the URL of now');
  t.equal(retries.length, 1);

  for (const [disabled, reason] of [
    [true, 'destination_disabled'],
    [false, 'destination_deleted'],
  ] as const) {
    if (disabled) store.put(snap('http://moved'), true);
    else store.rows.clear();
    state.changed({ tenant_id: 't', destination_id: 'd1' });
    const { attempt, write } = await handle({ ...delivery, manual: reason === 'destination_deleted' });
    await write();
    t.match(attempt, { status: 'canceled', code: 'CANCELED', final: true, next_attempt_at: null, response_data: { reason } });
    t.equal(seen.length, 1, `nothing sent to a ${reason.slice(12)} destination`);
    t.equal(retries.length, 1, 'and no retry follows');
  }
  t.same(
    emitted.map((a) => a.status),
    ['failed', 'canceled', 'canceled'],
  );
});
