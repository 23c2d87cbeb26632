// What the attempts service writes: events and their pending deliveries from routed records (bytes
// counted as published, a redelivery changing nothing), and how stored attempts move their delivery's row: the latest attempt of a batch decides the status,
// a success (in the batch or stored before) is never undone, and a redelivered attempt counts once.
import t, { type Test } from 'tap';
import type { Knex } from '../src/db/index.ts';
import { ensurePartitions } from '../src/db/partitions.ts';
import { MISSING_EVENTS, PipelineStore } from '../src/db/stores/pipeline.ts';
import { uuidv7 } from '../src/ids.ts';
import type { AttemptRecord, RoutedRecord } from '../src/model/index.ts';
import { onBothDatabases } from '../src/testing/databases.ts';

onBothDatabases(t, 'attempts: latest decides, a success stands, redeliveries count once', attemptsMoveDeliveries);
onBothDatabases(t, 'routed events: stored as published, payload bytes counted, redeliveries change nothing', routedEventsStored);
onBothDatabases(t, 'attempts waiting for their event: found by the partition key, probed, never scanned', missingEvents);

async function routedEventsStored(t: Test, db: Knex): Promise<void> {
  await ensurePartitions(db, new Date(), { behindDays: 1 });
  const store = new PipelineStore(db);
  const at = new Date(Date.now() - 30_000).toISOString();
  const event = (id: string, data: RoutedRecord['event']['data'], metadata: Record<string, unknown> | null) => ({
    id,
    tenant_id: 'acme',
    topic: 'order.created',
    time: at,
    received_at: at,
    eligible_for_retry: id !== 'e2',
    metadata,
    data,
    destination_id: null,
  });
  const data = { name: 'Zoë "quoted" \\ back\nslash', emoji: '🚀', nested: { list: [1, 2.5, null, true], empty: {} } };
  const routed: RoutedRecord[] = [
    { event: event('e1', data, { source: 'crm', ünïcode: 'ÿ' }), matched_destination_ids: ['d1', 'd2'], skipped_destination_ids: ['d3'] },
    { event: event('e2', { n: 1 }, null), matched_destination_ids: [], skipped_destination_ids: [] },
  ];
  // An attempt of e1 -> d1 stored before its routed record: its status stands.
  const first: AttemptRecord = {
    id: uuidv7(),
    tenant_id: 'acme',
    destination_id: 'd1',
    destination_type: 'webhook',
    event_id: 'e1',
    topic: 'order.created',
    event_time: at,
    event_received_at: at,
    status: 'success',
    code: '200',
    response_data: { status: 200, body: { ok: 'é' } },
    attempt_number: 1,
    manual: false,
    time: new Date().toISOString(),
    duration_ms: 4,
    final: true,
  };
  t.equal((await store.storeAttempts([first])).length, 1);
  await store.storeRouted(routed);
  await store.storeRouted(routed);

  const events = (await db('events').where({ tenant_id: 'acme' }).orderBy('id')) as Array<Record<string, unknown>>;
  t.equal(events.length, 2, 'each event stored once');
  const [e1, e2] = events;
  t.same(e1?.data, data, 'data as published');
  t.same(e1?.metadata, { source: 'crm', ünïcode: 'ÿ' });
  t.equal(
    e1?.payload_bytes,
    Buffer.byteLength(JSON.stringify(data)) + Buffer.byteLength(JSON.stringify({ source: 'crm', ünïcode: 'ÿ' })),
    'payload bytes are the UTF-8 bytes of data and metadata as JSON',
  );
  t.same(e1?.matched_destination_ids, ['d1', 'd2']);
  t.same(e1?.skipped_destination_ids, ['d3']);
  t.equal(e1?.eligible_for_retry, true);
  t.equal(e1?.destination_id, null);
  t.equal((e1?.received_at as Date | undefined)?.toISOString(), at);
  t.equal(e2?.metadata, null);
  t.equal(e2?.payload_bytes, Buffer.byteLength('{"n":1}'), 'no metadata counts nothing');
  t.same(e2?.matched_destination_ids, []);
  t.equal(e2?.eligible_for_retry, false);

  const deliveries = (await db('deliveries')
    .where({ tenant_id: 'acme' })
    .orderBy('destination_id')
    .select('destination_id', 'status')) as Array<{
    destination_id: string;
    status: string;
  }>;
  t.same(
    deliveries,
    [
      { destination_id: 'd1', status: 'success' },
      { destination_id: 'd2', status: 'pending' },
      { destination_id: 'd3', status: 'skipped' },
    ],
    'one row per matched or skipped destination; the attempt stored first keeps its status',
  );
  const [stored] = (await db('attempts').where({ id: first.id }).select('response_data')) as Array<{ response_data: unknown }>;
  t.same(stored?.response_data, { status: 200, body: { ok: 'é' } }, 'response_data stored as JSON');
}

async function missingEvents(t: Test, db: Knex): Promise<void> {
  await ensurePartitions(db, new Date(), { behindDays: 1 });
  const store = new PipelineStore(db);
  const now = new Date().toISOString();
  const yesterday = new Date(Date.now() - 86_400_000).toISOString();
  const event = {
    tenant_id: 'acme',
    topic: 'order.created',
    time: now,
    received_at: now,
    data: {},
    metadata: null,
    eligible_for_retry: true,
  };
  await store.storeRouted([{ event: { ...event, id: 'e1' }, matched_destination_ids: ['d1'], skipped_destination_ids: [] }]);
  const attempt = (event_id: string, event_received_at: string): AttemptRecord => ({
    id: uuidv7(),
    tenant_id: 'acme',
    destination_id: 'd1',
    destination_type: 'webhook',
    event_id,
    topic: 'order.created',
    event_time: now,
    event_received_at,
    status: 'success',
    code: '200',
    response_data: null,
    attempt_number: 1,
    manual: false,
    time: now,
    duration_ms: 1,
    final: true,
  });
  const attempts = [
    attempt('e1', now), // stored
    attempt('e1', yesterday), // no such row: the event of that id was received at another time
    attempt('e2', now), // not stored yet
    attempt('e1', ''), // recorded without its event's received time: found by tenant and id
    attempt('e3', ''),
  ];
  t.same(
    (await store.missingEvents(attempts)).map((a) => attempts.indexOf(a)),
    [1, 2, 4],
    'the attempts whose event row is missing, in their order',
  );

  // The look-up's generic plan on a day's partition of unanalyzed events (as through a fresh
  // database's first day): a probe per attempt, not a scan of the day's events.
  await db.raw(
    `INSERT INTO events (tenant_id, id, topic, time, data, received_at)
     SELECT 'acme', 'bulk' || g, 'order.created', now(), '{}', now() FROM generate_series(1, 5000) g`,
  );
  const plan = await db.transaction(async (tx) => {
    await tx.raw('SET LOCAL plan_cache_mode = force_generic_plan');
    await tx.raw(`PREPARE missing_events_plan(json) AS ${MISSING_EVENTS.sql.replace('?::json', '$1::json')}`);
    const keys = JSON.stringify([{ i: 0, tenant_id: 'acme', event_id: 'e9', received_at: now }]);
    const res = await tx.raw(`EXPLAIN (FORMAT JSON) EXECUTE missing_events_plan('${keys}')`);
    await tx.raw('DEALLOCATE missing_events_plan');
    return JSON.stringify((res.rows as Array<Record<string, unknown>>)[0]);
  });
  t.notMatch(plan, /"Seq Scan"|"Hash/, 'no sequential scan or hash of the events');
  t.match(plan, /"Index (Only )?Scan"/, 'events read through their primary key');
}

async function attemptsMoveDeliveries(t: Test, db: Knex): Promise<void> {
  await ensurePartitions(db, new Date(), { behindDays: 1 });
  const store = new PipelineStore(db);
  const base = Date.now() - 60_000;
  const eventTime = new Date(base).toISOString();
  const attempt = (event: string, n: number, status: 'success' | 'failed'): AttemptRecord => {
    const at = base + n * 1000;
    return {
      id: uuidv7(at),
      tenant_id: 'acme',
      destination_id: 'des_1',
      destination_type: 'webhook',
      event_id: event,
      topic: 'user.created',
      event_time: eventTime,
      event_received_at: eventTime,
      status,
      code: status === 'success' ? '200' : '503',
      response_data: null,
      attempt_number: n,
      manual: false,
      time: new Date(at).toISOString(),
      duration_ms: 3,
      final: false,
    };
  };
  // e1: failed, succeeded, failed again (a manual retry) in one batch; e2: two failures; e3..e300 succeed once.
  const e1 = [attempt('e1', 1, 'failed'), attempt('e1', 2, 'success'), attempt('e1', 3, 'failed')];
  const e2 = [attempt('e2', 1, 'failed'), attempt('e2', 2, 'failed')];
  const many = Array.from({ length: 298 }, (_, i) => attempt(`e${i + 3}`, 1, 'success'));
  const batch = [...many, ...e1, ...e2];
  t.equal((await store.storeAttempts(batch)).length, batch.length, 'every attempt is new');
  t.equal((await store.storeAttempts([e1[0] as AttemptRecord, ...e2])).length, 0, 'a redelivered attempt is not new');
  // A later batch: e1 fails once more; e2 finally succeeds.
  await store.storeAttempts([attempt('e1', 4, 'failed'), attempt('e2', 3, 'success')]);

  const rows = (await db('deliveries')
    .where({ tenant_id: 'acme' })
    .select('event_id', 'status', 'attempts', 'last_attempt_at', 'successful_at')) as Array<{
    event_id: string;
    status: string;
    attempts: number;
    last_attempt_at: Date;
    successful_at: Date | null;
  }>;
  const by = new Map(rows.map((r) => [r.event_id, r]));
  t.equal(rows.length, 300, 'one row per delivery');
  const r1 = by.get('e1');
  t.equal(r1?.status, 'success', 'a success in the batch stands against a later failure');
  t.equal(r1?.attempts, 4, 'attempts counts up to the latest');
  t.equal(r1?.successful_at?.toISOString(), e1[1]?.time, 'successful_at is the success, not the latest attempt');
  t.equal(r1?.last_attempt_at.toISOString(), new Date(base + 4000).toISOString(), 'last_attempt_at is the latest');
  const r2 = by.get('e2');
  t.equal(r2?.status, 'success', 'a success in a later batch');
  t.equal(r2?.successful_at?.toISOString(), new Date(base + 3000).toISOString());
  t.equal(r2?.attempts, 3);
  t.ok(
    many.every((a) => by.get(a.event_id)?.status === 'success' && by.get(a.event_id)?.successful_at?.toISOString() === a.time),
    'each of the 298 single successes has its own time',
  );
  t.equal(Number((await db('attempts').where({ tenant_id: 'acme' }).count({ n: '*' }))[0]?.n), 305, 'each attempt stored once');
}
