// The router's batch handler on its narrow dependencies (plain functions standing in for the
// destination cache, the claim table and the producer; the pipeline end to end is test/e2e): what
// goes to the dead-letter topic and why, repeats routed nowhere, and one delivery per enabled
// matching destination, the disabled ones recorded as skipped.
import t from 'tap';
import type { RoutableDestination } from '@switchyard/shared/db/stores/destinations.ts';
import type { InRecord } from '@switchyard/shared/bus/index.ts';
import type { EventRecord } from '@switchyard/shared/model/index.ts';
import { createRouter, type RouterDeps, selectDestinations } from '../src/handler.ts';

const dest = (id: string, over: Partial<RoutableDestination> = {}): RoutableDestination => ({
  id,
  topics: ['*'],
  filter: null,
  disabled_at: null,
  snapshot: {
    id,
    tenant_id: 'acme',
    type: 'webhook',
    config: { url: `https://example.test/${id}` },
    credentials: null,
    delivery_metadata: null,
  },
  ...over,
});

let offset = 0;
const rec = (value: unknown, over: Partial<InRecord<unknown>> = {}): InRecord<unknown> => ({
  topic: 'events',
  partition: 0,
  offset: String(offset++),
  key: 'acme',
  value,
  headers: {},
  timestamp: Date.parse('2026-11-26T00:00:00Z'),
  ...over,
});
const event = (over: Record<string, unknown> = {}) => ({
  id: `e${offset}`,
  tenant_id: 'acme',
  topic: 'user.created',
  data: { n: 1 },
  ...over,
});

function router(destinations: Record<string, RoutableDestination[]>, claimed = new Set<string>(), maxMessageBytes = 4 * 1024 * 1024) {
  const emitted: Parameters<RouterDeps['emit']>[0][] = [];
  const claims: string[] = [];
  const route = createRouter({
    topics: ['user.created', 'order.paid'],
    maxMessageBytes,
    destinationsOf: async (ids) => new Map(ids.filter((id) => id in destinations).map((id) => [id, destinations[id] ?? []])),
    // An event already claimed (routed before) is a repeat.
    claim: async (batch) => {
      claims.push(...batch.map((c) => c.id));
      return new Set(batch.flatMap((c, i) => (claimed.has(c.id) ? [] : [i])));
    },
    emit: async (out) => void emitted.push(out),
  });
  return { route, emitted, claims };
}

t.test('bad records go to the dead-letter topic with their reason; the rest of the batch is routed', async (t) => {
  const { route, emitted } = router({ acme: [dest('d1')] });
  const result = await route([
    rec(undefined, { decodeError: 'Unexpected token', raw: Buffer.from('{nope') }),
    rec({ tenant_id: 'acme', data: {} }),
    rec(event({ topic: 'user.unknown' })),
    rec(event({ tenant_id: 'ghost' })),
    rec(event({ data: { s: 'a\u0000b' } })),
    rec(event({ id: 'good' })),
  ]);
  t.same(
    result.deadLetters.map((d) => d.reason.split(':')[0]),
    ['invalid JSON', 'schema', 'unknown topic', 'unstorable', 'unknown tenant'],
    'each refused record, with why',
  );
  t.equal(emitted.length, 1, 'one write for the whole batch');
  const out = emitted[0];
  t.same(
    out?.deadLetters.map((d) => d.value instanceof Buffer),
    [true, true, true, true, true],
    'every dead letter is bytes',
  );
  t.same(
    out?.deliveries.map((d) => [d.event.id, d.destination.id, d.attempt_number, d.manual]),
    [['good', 'd1', 1, false]],
  );
});

t.test('a dead letter is the record as written: its bytes, key and headers, not the value as parsed', async (t) => {
  const { route, emitted } = router({ acme: [dest('d1')] });
  // As the consumer hands them over with keepRaw: the value parsed, and the bytes it came as.
  const written = (text: string, headers: Record<string, string> = {}) =>
    rec(JSON.parse(text), { raw: Buffer.from(text), headers, key: 'as-written' });
  const texts = [
    // Valid but for its topic: the validator fills in defaults (eligible_for_retry) as it checks.
    '{ "tenant_id": "acme", "topic": "user.unknown",  "data": {"n": 1.0} }',
    '{"tenant_id":"ghost","topic":"user.created","data":{"s":"\\u00e9"}}',
    '{"tenant_id":"acme","data":{}}',
  ];
  await route(texts.map((x) => written(x, { traceparent: '00-abc-def-01', origin: 'crm' })));
  const letters = emitted[0]?.deadLetters ?? [];
  t.same(letters.map((d) => (d.value as Buffer).toString()).sort(), [...texts].sort(), 'the original bytes, spacing and escapes included');
  for (const d of letters) {
    t.equal(d.key, 'as-written', 'the key as it came');
    t.match(d.headers, { traceparent: '00-abc-def-01', origin: 'crm', 'x-dead-letter-reason': String }, 'its headers, plus the reason');
  }
});

t.test('a record timestamp no store holds: a dead letter, never thrown; the rest of the batch routed', async (t) => {
  const { route, emitted } = router({ acme: [dest('d1')] });
  const result = await route([
    // A producer sets the timestamp (CreateTime): before year 1, after 9999, and past what a Date holds.
    rec(event({ id: 'ancient' }), { timestamp: -62_135_596_800_001 }),
    rec(event({ id: 'far', time: '2026-01-01T00:00:00Z' }), { timestamp: 253_402_300_800_000 }),
    rec(event({ id: 'beyond' }), { timestamp: -9e15 }),
    rec(event({ id: 'first' }), { timestamp: -62_135_596_800_000 }),
    rec(event({ id: 'good' })),
  ]);
  t.same(
    result.deadLetters.map((d) => d.reason.split(':')[0]),
    ['timestamp', 'timestamp', 'timestamp'],
  );
  t.same(
    emitted[0]?.deliveries.map((d) => [d.event.id, d.event.received_at]),
    [
      ['first', '0001-01-01T00:00:00.000Z'],
      ['good', '2026-11-26T00:00:00.000Z'],
    ],
  );
});

t.test('an event whose records could never be written is a dead letter, unclaimed; the rest routed', async (t) => {
  const MiB = 1024 * 1024;
  const padded = dest('padded', {
    snapshot: { ...dest('padded').snapshot, config: { url: 'https://example.test/p', pad: 'p'.repeat(MiB) } },
  });
  // 3 bytes a character as UTF-8: 1 MB of text each, 2 MB with the event below.
  const euro = dest('euro', {
    snapshot: { ...dest('euro').snapshot, config: { url: 'https://example.test/e', pad: '€'.repeat(350_000) } },
  });
  const { route, emitted, claims } = router({ acme: [dest('d1')], wide: [dest('d1'), padded], euro: [euro] }, new Set(), 2 * MiB);
  // As written by a producer: bytes under the topic's limit, JSON over it once parsed and written
  // again (each 1e20 becomes 21 digits).
  const growing = `{"id":"grows","tenant_id":"acme","topic":"user.created","data":{"n":[${Array(100_000).fill('1e20').join(',')}]}}`;
  const result = await route([
    rec(event({ id: 'huge', data: { s: 'x'.repeat(2 * MiB) } })),
    rec(JSON.parse(growing), { raw: Buffer.from(growing) }),
    rec(event({ id: 'wide', tenant_id: 'wide', data: { s: 'w'.repeat(MiB) } })),
    rec(event({ id: 'euros', tenant_id: 'euro', data: { s: '€'.repeat(350_000) } })),
    rec(event({ id: 'near', data: { s: 'n'.repeat(MiB) } })),
    rec(event({ id: 'small' })),
  ]);
  t.ok(growing.length < 600_000, 'the growing record is small as written');
  t.same(
    result.deadLetters.map((d) => d.reason.replace(/ \d+ bytes/, ' N bytes')),
    [
      'too large: its routed record would be about N bytes, over KAFKA_MAX_MESSAGE_BYTES (2097152) less 65536 for framing',
      'too large: its routed record would be about N bytes, over KAFKA_MAX_MESSAGE_BYTES (2097152) less 65536 for framing',
      'too large: its delivery record to destination padded would be about N bytes, over KAFKA_MAX_MESSAGE_BYTES (2097152) less 65536 for framing',
      'too large: its delivery record to destination euro would be about N bytes, over KAFKA_MAX_MESSAGE_BYTES (2097152) less 65536 for framing',
    ],
    'each with why, naming the destination whose record would not fit',
  );
  t.same(claims, ['near', 'small'], 'only events that fit are claimed, so a repeat of a refused one is refused again');
  t.same(
    emitted[0]?.deliveries.map((d) => d.event.id),
    ['near', 'small'],
    'a 1 MiB event with its destination fits',
  );
  const json = emitted[0]?.json;
  const near = emitted[0]?.deliveries[0];
  t.ok(json && near && json(near.event).length > MiB, 'the JSON the size check made is handed on for the records');
});

t.test('an event without id, time or eligible_for_retry gets them from its record', async (t) => {
  const { route, emitted } = router({ acme: [dest('d1')] });
  const r = rec({ tenant_id: 'acme', topic: 'order.paid', data: {} }, { partition: 2, offset: '41' });
  await route([r]);
  const e = emitted[0]?.deliveries[0]?.event as EventRecord;
  t.match(e, { id: 'kafka-2-41', time: '2026-11-26T00:00:00.000Z', eligible_for_retry: true, received_at: '2026-11-26T00:00:00.000Z' });
});

t.test('a repeat of a routed event is routed nowhere', async (t) => {
  const { route, emitted } = router({ acme: [dest('d1')] }, new Set(['seen']));
  const result = await route([rec(event({ id: 'seen' })), rec(event({ id: 'new' }))]);
  t.same(
    result.duplicates.map((e) => e.id),
    ['seen'],
  );
  t.same(
    emitted[0]?.deliveries.map((d) => d.event.id),
    ['new'],
  );
  t.same(
    emitted[0]?.routed.map((r) => r.event.id),
    ['new'],
  );
});

t.test('one delivery per enabled matching destination; disabled matches are skipped', async (t) => {
  const destinations = [
    dest('all'),
    dest('users', { topics: ['user.created'] }),
    dest('orders', { topics: ['order.paid'] }),
    dest('big', { filter: { data: { n: { $gte: 10 } } } }),
    dest('off', { disabled_at: '2026-11-25T00:00:00.000Z' }),
  ];
  const { route, emitted } = router({ acme: destinations });
  await route([rec(event({ id: 'small', data: { n: 1 } })), rec(event({ id: 'large', data: { n: 50 } }))]);
  const to = (id: string) =>
    emitted[0]?.deliveries
      .filter((d) => d.event.id === id)
      .map((d) => d.destination.id)
      .sort();
  t.same(to('small'), ['all', 'users']);
  t.same(to('large'), ['all', 'big', 'users']);
  t.same(
    emitted[0]?.routed.map((r) => [r.event.id, r.matched_destination_ids.length, r.skipped_destination_ids]),
    [
      ['small', 2, ['off']],
      ['large', 3, ['off']],
    ],
  );
});

t.test('an event naming a destination goes to that one only, whatever its topics', async (t) => {
  const destinations = [dest('a', { topics: ['order.paid'] }), dest('b')];
  t.same(
    selectDestinations(
      { ...event({ destination_id: 'a' }), time: '', eligible_for_retry: true, metadata: null } as EventRecord,
      destinations,
    ).matched.map((d) => d.id),
    ['a'],
  );
  t.same(
    selectDestinations(
      { ...event({ destination_id: 'gone' }), time: '', eligible_for_retry: true, metadata: null } as EventRecord,
      destinations,
    ),
    { matched: [], disabled: [] },
  );
});
