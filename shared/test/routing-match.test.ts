import t from 'tap';
import type { FilterableEvent } from '../src/routing/match.ts';
import {
  compileFilter,
  FILTER_MAX_DEPTH,
  matchesFilter,
  matchesTopic,
  TOPIC_PATTERN_CACHE_LIMIT,
  topicPatternCacheSize,
  validateFilter,
} from '../src/routing/match.ts';

const event: FilterableEvent = {
  id: 'evt_1',
  topic: 'order.created',
  time: '2024-05-01T12:00:00.000Z',
  metadata: { source: 'checkout', region: 'eu', nothing: null },
  data: {
    amount: 120,
    currency: 'usd',
    status: 'paid',
    paid: true,
    note: null,
    tags: ['vip', 'gift', 'new'],
    scores: [3, 9, 27],
    customer: { id: 'cus_1', email: 'a@example.com', address: { country: 'FR', city: 'Paris' } },
    items: [
      { sku: 'a1', qty: 2, price: 10 },
      { sku: 'b2', qty: 1, price: 100 },
    ],
    created: '2024-05-01T12:00:00Z',
    matrix: [
      [1, 2],
      [3, 4],
    ],
    label: 'Order #42',
  },
};

const m = (filter: Record<string, unknown> | null | undefined, e: FilterableEvent = event) => matchesFilter(filter, e);

t.test('matchesTopic', async (t) => {
  t.test('star matches everything', async (t) => {
    t.ok(matchesTopic(['*'], 'order.created'));
    t.ok(matchesTopic(['user.created', '*'], 'anything'));
    t.ok(matchesTopic(['*'], ''));
  });

  t.test('exact match', async (t) => {
    t.ok(matchesTopic(['user.created', 'order.created'], 'order.created'));
    t.notOk(matchesTopic(['user.created'], 'order.created'));
    t.notOk(matchesTopic(['order'], 'order.created'), 'no prefix match without a wildcard');
    t.notOk(matchesTopic(['Order.Created'], 'order.created'), 'case sensitive');
    t.notOk(matchesTopic([], 'order.created'), 'no topics, no match');
  });

  t.test('trailing wildcard', async (t) => {
    t.ok(matchesTopic(['user.*'], 'user.created'));
    t.ok(matchesTopic(['user.*'], 'user.a.b'));
    t.ok(matchesTopic(['user.*'], 'user.'), 'a star matches the empty run');
    t.notOk(matchesTopic(['user.*'], 'user'));
    t.notOk(matchesTopic(['user.*'], 'users.created'));
    t.notOk(matchesTopic(['user.*'], 'order.user.created'));
  });

  t.test('leading wildcard', async (t) => {
    t.ok(matchesTopic(['*.created'], 'order.created'));
    t.ok(matchesTopic(['*.created'], 'a.b.created'));
    t.notOk(matchesTopic(['*.created'], 'created'));
    t.notOk(matchesTopic(['*.created'], 'order.created.v2'));
  });

  t.test('middle and multiple wildcards', async (t) => {
    t.ok(matchesTopic(['order.*.v2'], 'order.created.v2'));
    t.ok(matchesTopic(['order.*.v2'], 'order.a.b.v2'));
    t.notOk(matchesTopic(['order.*.v2'], 'order.created.v3'));
    t.ok(matchesTopic(['*.*'], 'a.b'));
    t.notOk(matchesTopic(['*.*'], 'ab'));
    t.ok(matchesTopic(['a*b*c'], 'abc'));
    t.ok(matchesTopic(['a*b*c'], 'axxbyyc'));
    t.ok(matchesTopic(['a*b*c'], 'abbbc'));
    t.notOk(matchesTopic(['a*b*c'], 'acb'));
    t.ok(matchesTopic(['**'], 'x'), 'consecutive stars');
    t.ok(matchesTopic(['a**b'], 'ab'));
  });

  t.test('prefix and suffix must not overlap', async (t) => {
    t.notOk(matchesTopic(['ab*ba'], 'aba'));
    t.ok(matchesTopic(['ab*ba'], 'abba'));
    t.notOk(matchesTopic(['a*a'], 'a'));
    t.ok(matchesTopic(['a*a'], 'aa'));
    t.notOk(matchesTopic(['a*bb*a'], 'abba'.slice(0, 3)));
    t.notOk(matchesTopic(['x*ab*ab'], 'xab'), 'middle piece may not eat into the suffix');
    t.ok(matchesTopic(['x*ab*ab'], 'xabab'));
  });

  t.test('regex metacharacters are literal', async (t) => {
    t.ok(matchesTopic(['a.(b)+*'], 'a.(b)+c'));
    t.notOk(matchesTopic(['a.b*'], 'axb'));
    t.ok(matchesTopic(['[x]*'], '[x]y'));
    t.ok(matchesTopic(['$^|*?'], '$^|zz?'));
  });

  t.test('the pattern cache is bounded and stays correct', async (t) => {
    let matched = 0;
    for (let i = 0; i < TOPIC_PATTERN_CACHE_LIMIT * 2 + 5; i++) if (matchesTopic([`t${i}.*`], `t${i}.x`)) matched++;
    t.equal(matched, TOPIC_PATTERN_CACHE_LIMIT * 2 + 5);
    t.ok(topicPatternCacheSize() <= TOPIC_PATTERN_CACHE_LIMIT);
    t.ok(matchesTopic(['t0.*'], 't0.y'), 'evicted patterns are compiled again');
    t.notOk(matchesTopic(['t0.*'], 't1.y'));
  });
});

t.test('empty filters', async (t) => {
  t.ok(m(null));
  t.ok(m(undefined));
  t.ok(m({}));
  t.ok(m({ data: {} }), 'an empty nested object is an empty AND');
  t.ok(m({ nope: {} }), 'even over a missing field');
});

t.test('top-level fields', async (t) => {
  t.ok(m({ topic: 'order.created' }));
  t.notOk(m({ topic: 'order.updated' }));
  t.ok(m({ id: 'evt_1' }));
  t.ok(m({ time: '2024-05-01T12:00:00.000Z' }));
  t.ok(m({ metadata: { source: 'checkout' } }));
  t.notOk(m({ metadata: { source: 'api' } }));
  t.notOk(m({ tenant_id: 't1' }), 'only id, topic, time, metadata and data are visible');
  const withTenant = { ...event, tenant_id: 't1' };
  t.notOk(m({ tenant_id: 't1' }, withTenant), 'extra event fields stay invisible');
});

t.test('scalar equality and AND', async (t) => {
  t.ok(m({ data: { amount: 120 } }));
  t.notOk(m({ data: { amount: '120' } }), 'no type coercion');
  t.ok(m({ data: { paid: true } }));
  t.notOk(m({ data: { paid: false } }));
  t.ok(m({ data: { note: null } }), 'null matches a present null');
  t.notOk(m({ data: { missing: null } }), 'null does not match a missing field');
  t.ok(m({ data: { amount: 120, currency: 'usd' }, topic: 'order.created' }));
  t.notOk(m({ data: { amount: 120, currency: 'eur' } }), 'keys are ANDed');
  t.notOk(m({ data: { amount: 120 }, topic: 'x' }));
  t.ok(m({ metadata: { nothing: null } }));
});

t.test('nested objects', async (t) => {
  t.ok(m({ data: { customer: { address: { country: 'FR' } } } }));
  t.ok(m({ data: { customer: { id: 'cus_1', address: { city: 'Paris', country: 'FR' } } } }));
  t.notOk(m({ data: { customer: { address: { country: 'DE' } } } }));
  t.notOk(m({ data: { customer: { phone: { country: 'FR' } } } }), 'missing intermediate');
  t.notOk(m({ data: { amount: { value: 120 } } }), 'a scalar has no fields');
  t.ok(m({ data: { amount: { value: { $exist: false } } } }), 'fields of a scalar are missing');
  t.notOk(m({ data: { customer: { id: 'cus_1', email: 'b@example.com' } } }));
  t.notOk(m({ metadata: { source: 'checkout' } }, { ...event, metadata: null }), 'null metadata has no fields');
  t.notOk(m({ data: { constructor: { $exist: true } } }), 'inherited properties are not fields');
  t.notOk(m({ data: { toString: { $exist: true } } }));
});

t.test('arrays', async (t) => {
  t.ok(m({ data: { tags: 'vip' } }), 'a scalar matches an array that contains it');
  t.notOk(m({ data: { tags: 'old' } }));
  t.ok(m({ data: { scores: 9 } }));
  t.ok(m({ data: { tags: ['vip', 'gift', 'new'] } }), 'an array literal matches an equal array');
  t.notOk(m({ data: { tags: ['vip', 'gift'] } }), 'not a subset match');
  t.notOk(m({ data: { tags: ['gift', 'vip', 'new'] } }), 'order matters');
  t.ok(m({ data: { matrix: [3, 4] } }), 'an array literal matches an array containing it');
  t.ok(m({ data: { items: { sku: 'b2' } } }), 'a nested object matches an array element');
  t.ok(m({ data: { items: { sku: 'b2', qty: 1 } } }), 'all keys on the same element');
  t.notOk(m({ data: { items: { sku: 'b2', qty: 2 } } }), 'not across elements');
  t.ok(m({ data: { items: { price: { $gte: 100 } } } }));
  t.notOk(m({ data: { items: { price: { $gt: 100 } } } }));
  t.notOk(m({ data: { tags: { x: 1 } } }), 'scalar elements have no fields');
  t.ok(m({ data: { tags: { x: { $exist: false } } } }));
  t.notOk(m({ data: { empty: { x: { $exist: false } } } }, { ...event, data: { empty: [] } }), 'an empty array has no element');
});

t.test('$eq and $neq', async (t) => {
  t.ok(m({ data: { amount: { $eq: 120 } } }));
  t.notOk(m({ data: { amount: { $eq: 121 } } }));
  t.ok(m({ data: { tags: { $eq: 'gift' } } }), 'contains');
  t.ok(m({ data: { customer: { address: { $eq: { country: 'FR', city: 'Paris' } } } } }), 'deep object equality');
  t.ok(m({ data: { customer: { address: { $eq: { city: 'Paris', country: 'FR' } } } } }), 'key order does not matter');
  t.notOk(m({ data: { customer: { address: { $eq: { country: 'FR' } } } } }), '$eq object is equality, not a subset');
  t.ok(m({ data: { items: { $eq: { sku: 'a1', qty: 2, price: 10 } } } }), 'array containing an equal object');
  t.ok(m({ data: { tags: { $eq: ['vip', 'gift', 'new'] } } }));
  t.notOk(m({ data: { tags: { $eq: ['vip'] } } }));
  t.ok(m({ data: { note: { $eq: null } } }));
  t.notOk(m({ data: { missing: { $eq: null } } }), 'missing fails $eq');
  t.notOk(m({ data: { missing: { $eq: 1 } } }));

  t.ok(m({ data: { amount: { $neq: 121 } } }));
  t.notOk(m({ data: { amount: { $neq: 120 } } }));
  t.notOk(m({ data: { tags: { $neq: 'vip' } } }), 'an array containing the value is not unequal');
  t.ok(m({ data: { tags: { $neq: 'old' } } }));
  t.ok(m({ data: { missing: { $neq: 1 } } }), 'missing succeeds $neq');
  t.notOk(m({ data: { note: { $neq: null } } }));
  t.ok(m({ data: { customer: { address: { $neq: { country: 'FR' } } } } }));
  t.ok(m({ topic: { $neq: 'user.created' } }));
});

t.test('$gt $gte $lt $lte on numbers', async (t) => {
  t.ok(m({ data: { amount: { $gt: 100 } } }));
  t.notOk(m({ data: { amount: { $gt: 120 } } }));
  t.ok(m({ data: { amount: { $gte: 120 } } }));
  t.notOk(m({ data: { amount: { $gte: 121 } } }));
  t.ok(m({ data: { amount: { $lt: 121 } } }));
  t.notOk(m({ data: { amount: { $lt: 120 } } }));
  t.ok(m({ data: { amount: { $lte: 120 } } }));
  t.notOk(m({ data: { amount: { $lte: 119.5 } } }));
  t.ok(m({ data: { amount: { $gt: 100, $lt: 200 } } }), 'a range');
  t.notOk(m({ data: { amount: { $gt: 100, $lt: 110 } } }));
  t.ok(m({ data: { amount: { $gt: -1e308 } } }));
  t.notOk(m({ data: { amount: { $gt: '100' } } }), 'a number does not compare with a string');
  t.notOk(m({ data: { currency: { $gt: 1 } } }), 'a string does not compare with a number');
  t.notOk(m({ data: { paid: { $gte: 0 } } }), 'booleans do not compare');
  t.notOk(m({ data: { note: { $lte: 0 } } }), 'null does not compare');
  t.notOk(m({ data: { missing: { $lt: 1e9 } } }), 'missing fails');
  t.ok(m({ data: { scores: { $gt: 20 } } }), 'any element of an array');
  t.notOk(m({ data: { scores: { $gt: 27 } } }));
  t.ok(m({ data: { scores: { $lt: 4 } } }));
});

t.test('comparisons on strings and dates', async (t) => {
  t.ok(m({ data: { currency: { $gt: 'eur' } } }), 'lexical');
  t.notOk(m({ data: { currency: { $lt: 'eur' } } }));
  t.ok(m({ data: { currency: { $gte: 'usd', $lte: 'usd' } } }));
  t.ok(m({ data: { label: { $lt: 'Order #5' } } }), 'strings compare lexically, not numerically');
  t.ok(m({ time: { $gte: '2024-05-01T00:00:00Z' } }));
  t.ok(m({ time: { $lt: '2024-05-02' } }), 'a date bound against a date-time');
  t.notOk(m({ time: { $lt: '2024-05-01' } }));
  t.ok(m({ time: { $gt: '2024-05-01' } }));
  t.ok(m({ time: { $gte: '2024-05-01T12:00:00Z' } }), 'same instant, different precision, as dates');
  t.ok(m({ time: { $lte: '2024-05-01T12:00:00Z' } }));
  t.notOk(m({ time: { $gt: '2024-05-01T12:00:00Z' } }), 'lexically greater, but the same instant');
  t.ok(m({ data: { created: { $lt: '2024-05-01T12:00:00.500Z' } } }), 'lexically greater, but earlier');
  t.ok(m({ time: { $gt: '2024-05-01T13:59:59+02:00' } }), 'offsets are taken into account');
  t.notOk(m({ time: { $gt: '2024-05-01T14:00:00+02:00' } }));
  t.ok(m({ time: { $gte: '2024-05-01T14:00:00+02:00', $lte: '2024-05-01T14:00:00+02:00' } }));
  t.ok(m({ time: { $gte: '2024-05-01T12:00' } }), 'without seconds or offset, read as UTC');
  t.notOk(m({ time: { $gt: '2024-05-01T12:00' } }));
  t.ok(m({ data: { currency: { $gt: '2024-01-01' } } }), 'a non-date string against a date bound compares lexically');
  const odd = { ...event, data: { when: ['2023-01-01', '2025-01-01'] } };
  t.ok(m({ data: { when: { $gt: '2024-06-01' } } }, odd), 'any element of an array');
  t.notOk(m({ data: { when: { $gt: '2025-06-01' } } }, odd));
});

t.test('$in and $nin', async (t) => {
  t.ok(m({ data: { currency: { $in: ['eur', 'usd'] } } }));
  t.notOk(m({ data: { currency: { $in: ['eur', 'gbp'] } } }));
  t.notOk(m({ data: { currency: { $in: [] } } }));
  t.ok(m({ data: { amount: { $in: [1, 120] } } }));
  t.notOk(m({ data: { amount: { $in: ['120'] } } }), 'no coercion');
  t.ok(m({ data: { tags: { $in: ['old', 'gift'] } } }), 'array overlap');
  t.notOk(m({ data: { tags: { $in: ['old', 'used'] } } }));
  t.ok(m({ data: { tags: { $in: [['vip', 'gift', 'new']] } } }), 'the whole array as one element');
  t.ok(m({ data: { customer: { address: { $in: [{ city: 'Paris', country: 'FR' }] } } } }), 'deep equality of objects');
  t.ok(m({ data: { items: { $in: [{ sku: 'b2', qty: 1, price: 100 }] } } }), 'object elements of an array');
  t.ok(m({ data: { note: { $in: [null] } } }));
  t.notOk(m({ data: { missing: { $in: [null] } } }), 'missing fails $in');
  t.ok(m({ topic: { $in: ['order.created', 'order.updated'] } }));

  t.ok(m({ data: { currency: { $nin: ['eur', 'gbp'] } } }));
  t.notOk(m({ data: { currency: { $nin: ['eur', 'usd'] } } }));
  t.ok(m({ data: { currency: { $nin: [] } } }));
  t.notOk(m({ data: { tags: { $nin: ['gift'] } } }), 'overlap fails $nin');
  t.ok(m({ data: { tags: { $nin: ['old'] } } }));
  t.ok(m({ data: { missing: { $nin: ['x'] } } }), 'missing succeeds $nin');
});

t.test('$startsWith and $endsWith', async (t) => {
  t.ok(m({ topic: { $startsWith: 'order.' } }));
  t.notOk(m({ topic: { $startsWith: 'user.' } }));
  t.ok(m({ topic: { $endsWith: '.created' } }));
  t.notOk(m({ topic: { $endsWith: '.updated' } }));
  t.ok(m({ data: { customer: { email: { $endsWith: '@example.com' } } } }));
  t.ok(m({ data: { tags: { $startsWith: 'gi' } } }), 'any string element of an array');
  t.notOk(m({ data: { tags: { $endsWith: 'xyz' } } }));
  t.ok(m({ topic: { $startsWith: '' } }));
  t.notOk(m({ data: { amount: { $startsWith: '1' } } }), 'numbers are not strings');
  t.notOk(m({ data: { missing: { $startsWith: '' } } }), 'missing fails');
  t.notOk(m({ data: { note: { $endsWith: '' } } }), 'null fails');
  t.ok(m({ topic: { $startsWith: 'order', $endsWith: 'created' } }));
});

t.test('$exist', async (t) => {
  t.ok(m({ data: { amount: { $exist: true } } }));
  t.notOk(m({ data: { amount: { $exist: false } } }));
  t.ok(m({ data: { missing: { $exist: false } } }));
  t.notOk(m({ data: { missing: { $exist: true } } }));
  t.ok(m({ data: { note: { $exist: true } } }), 'null counts as present');
  t.notOk(m({ data: { note: { $exist: false } } }));
  t.ok(m({ metadata: { $exist: true } }, { ...event, metadata: null }), 'null metadata is present');
  t.ok(m({ data: { customer: { phone: { $exist: false } } } }));
  t.ok(m({ data: { nope: { deeper: { $exist: false } } } }), 'below a missing field');
  t.ok(m({ data: { $exist: false } }, { ...event, data: undefined }), 'an undefined value is missing');
  t.ok(m({ data: { amount: { $exist: true, $gt: 100 } } }));
});

t.test('$or', async (t) => {
  t.ok(m({ $or: [{ topic: 'x' }, { data: { amount: 120 } }] }), 'top level');
  t.notOk(m({ $or: [{ topic: 'x' }, { data: { amount: 1 } }] }));
  t.ok(m({ data: { $or: [{ currency: 'eur' }, { currency: 'usd' }] } }), 'at a field: sub-filters over the field value');
  t.notOk(m({ data: { $or: [{ currency: 'eur' }, { status: 'failed' }] } }));
  t.ok(m({ data: { amount: { $or: [{ $lt: 10 }, { $gt: 100 }] } } }), 'operators on one field');
  t.notOk(m({ data: { amount: { $or: [{ $lt: 10 }, { $gt: 200 }] } } }));
  t.ok(m({ data: { missing: { $or: [{ $exist: false }, { $eq: 1 }] } } }), 'presence is passed down');
  t.ok(m({ $or: [{ data: { amount: 1 } }], topic: 'order.created' }) === false, 'ANDed with siblings');
  t.ok(m({ $or: [{ data: { amount: 120 } }], topic: 'order.created' }));
});

t.test('$and', async (t) => {
  t.ok(m({ $and: [{ topic: 'order.created' }, { data: { amount: { $gt: 100 } } }] }));
  t.notOk(m({ $and: [{ topic: 'order.created' }, { data: { amount: { $gt: 200 } } }] }));
  t.ok(m({ data: { amount: { $and: [{ $gt: 100 }, { $lt: 200 }] } } }));
  t.notOk(m({ data: { amount: { $and: [{ $gt: 100 }, { $lt: 110 }] } } }));
  t.ok(m({ data: { $and: [{ currency: 'usd' }, { tags: 'vip' }] } }));
  t.ok(m({ data: { items: { $and: [{ sku: 'a1' }, { qty: 2 }] } } }), 'the same element');
});

t.test('$not', async (t) => {
  t.ok(m({ $not: { topic: 'user.created' } }));
  t.notOk(m({ $not: { topic: 'order.created' } }));
  t.ok(m({ data: { amount: { $not: { $gt: 200 } } } }));
  t.notOk(m({ data: { amount: { $not: { $gt: 100 } } } }));
  t.ok(m({ data: { missing: { $not: { $gt: 5 } } } }), 'a negated operator on a missing field succeeds');
  t.notOk(m({ data: { missing: { $not: { $exist: false } } } }));
  t.ok(m({ data: { $not: { currency: 'eur' } } }));
  t.notOk(m({ data: { tags: { $not: { $in: ['gift'] } } } }));
  t.ok(m({ $not: { $not: { topic: 'order.created' } } }), 'double negation');
  t.ok(m({ data: { amount: { $not: { $in: [1, 2] } } } }));
});

t.test('combinations', async (t) => {
  const filter = {
    topic: { $startsWith: 'order.' },
    $or: [{ data: { amount: { $gte: 100 }, currency: { $in: ['usd', 'eur'] } } }, { metadata: { source: 'admin' } }],
    $not: { data: { status: { $in: ['refunded', 'cancelled'] } } },
    data: {
      customer: { address: { country: { $nin: ['US', 'CA'] } } },
      $and: [{ tags: 'vip' }, { $or: [{ items: { qty: { $gt: 1 } } }, { paid: false }] }],
    },
  };
  t.ok(m(filter));
  t.notOk(m(filter, { ...event, topic: 'user.created' }));
  const small = { ...event, data: { ...(event.data as Record<string, unknown>), amount: 5 } };
  t.notOk(m(filter, small), 'neither $or branch');
  t.ok(m(filter, { ...small, metadata: { source: 'admin' } }), 'second $or branch');
  const refunded = { ...event, data: { ...(event.data as Record<string, unknown>), status: 'refunded' } };
  t.notOk(m(filter, refunded), '$not');
  const single = { ...event, data: { ...(event.data as Record<string, unknown>), items: [{ sku: 'z', qty: 1 }] } };
  t.notOk(m(filter, single), 'nested $or in $and');
  t.ok(m(filter, { ...single, data: { ...(single.data as Record<string, unknown>), paid: false } }));
});

t.test('compiled predicates', async (t) => {
  const filter = { data: { amount: { $gt: 100 } } };
  const p = compileFilter(filter);
  t.equal(compileFilter(filter), p, 'cached per filter object');
  t.ok(p(event));
  t.notOk(p({ ...event, data: { amount: 1 } }));
  t.ok(compileFilter(null)(event));
  t.ok(compileFilter({})(event));
});

t.test('malformed filters match no event', async (t) => {
  t.notOk(m({ data: { amount: { $foo: 1 } } }));
  t.notOk(m({ $or: [] }));
  t.notOk(m({ $not: { data: { amount: { $in: 'x' } } } }), 'not even under $not');
  t.notOk(m(['x'] as unknown as Record<string, unknown>));
  t.notOk(m('x' as unknown as Record<string, unknown>));
  let deep: Record<string, unknown> = { $exist: false };
  for (let i = 0; i < FILTER_MAX_DEPTH + 2; i++) deep = { a: deep };
  t.notOk(m(deep), 'too deep');
});

t.test('validateFilter accepts well-formed filters', async (t) => {
  t.same(validateFilter(null), []);
  t.same(validateFilter(undefined), []);
  t.same(validateFilter({}), []);
  t.same(
    validateFilter({
      topic: { $startsWith: 'a', $endsWith: 'b' },
      time: { $gte: '2024-01-01', $lt: '2025-01-01' },
      data: {
        amount: { $gt: 1, $lte: 2.5, $neq: 3, $eq: { a: [1, { b: null }] } },
        tags: ['x', 'y'],
        list: { $in: [1, 'a', null, [1], { k: 1 }], $nin: [] },
        here: { $exist: true },
        $or: [{ a: 1 }, { b: { $not: { $eq: 2 } } }],
        $and: [{ c: true }],
        $not: { d: null },
      },
      $or: [{ id: 'x' }],
    }),
    [],
  );
});

t.test('validateFilter reports problems', async (t) => {
  const problems = (f: unknown) => validateFilter(f);
  t.same(problems('x'), [{ path: 'filter', message: 'must be a JSON object' }]);
  t.same(problems([]), [{ path: 'filter', message: 'must be a JSON object' }]);
  t.same(problems(5), [{ path: 'filter', message: 'must be a JSON object' }]);
  t.same(problems({ data: { amount: { $foo: 1 } } }), [{ path: 'filter.data.amount.$foo', message: 'unknown operator $foo' }]);
  t.same(problems({ $ne: 1 }), [{ path: 'filter.$ne', message: 'unknown operator $ne' }]);
  t.same(problems({ $exists: true }), [{ path: 'filter.$exists', message: 'unknown operator $exists' }]);
  t.same(problems({ $or: { a: 1 } }), [{ path: 'filter.$or', message: 'must be an array of filter objects' }]);
  t.same(problems({ data: { $and: 'x' } }), [{ path: 'filter.data.$and', message: 'must be an array of filter objects' }]);
  t.same(problems({ $or: [] }), [{ path: 'filter.$or', message: 'must not be empty' }]);
  t.same(problems({ $or: [{ a: 1 }, 2, [3], null] }), [
    { path: 'filter.$or[1]', message: 'must be a filter object' },
    { path: 'filter.$or[2]', message: 'must be a filter object' },
    { path: 'filter.$or[3]', message: 'must be a filter object' },
  ]);
  t.same(problems({ $or: [{ a: { $gt: true } }] }), [{ path: 'filter.$or[0].a.$gt', message: 'must be a number or a string' }]);
  t.same(problems({ data: { x: { $in: 'a' } } }), [{ path: 'filter.data.x.$in', message: 'must be an array' }]);
  t.same(problems({ data: { x: { $nin: { a: 1 } } } }), [{ path: 'filter.data.x.$nin', message: 'must be an array' }]);
  t.same(problems({ x: { $exist: 'yes' } }), [{ path: 'filter.x.$exist', message: 'must be true or false' }]);
  t.same(problems({ x: { $exist: 1 } }), [{ path: 'filter.x.$exist', message: 'must be true or false' }]);
  t.same(problems({ x: { $startsWith: 1 } }), [{ path: 'filter.x.$startsWith', message: 'must be a string' }]);
  t.same(problems({ x: { $endsWith: null } }), [{ path: 'filter.x.$endsWith', message: 'must be a string' }]);
  for (const op of ['$gt', '$gte', '$lt', '$lte']) {
    t.same(problems({ data: { amount: { [op]: null } } }), [{ path: `filter.data.amount.${op}`, message: 'must be a number or a string' }]);
    t.same(problems({ data: { amount: { [op]: [1] } } }), [{ path: `filter.data.amount.${op}`, message: 'must be a number or a string' }]);
  }
  t.same(problems({ x: { $gt: Number.POSITIVE_INFINITY } }), [{ path: 'filter.x.$gt', message: 'must be a number or a string' }]);
  t.same(problems({ x: { $not: 5 } }), [{ path: 'filter.x.$not', message: 'must be a filter object' }]);
  t.same(problems({ x: { $not: [{ a: 1 }] } }), [{ path: 'filter.x.$not', message: 'must be a filter object' }]);
  t.same(problems({ x: { $not: { $bad: 1 } } }), [{ path: 'filter.x.$not.$bad', message: 'unknown operator $bad' }]);
  t.same(problems({ x: { $eq: Number.NaN } }), [{ path: 'filter.x.$eq', message: 'must be a finite number' }]);
  t.same(problems({ x: undefined }), [{ path: 'filter.x', message: 'must be a JSON value' }]);
  t.same(problems({ x: { $in: [1, () => 1] } }), [{ path: 'filter.x.$in[1]', message: 'must be a JSON value' }]);
  t.same(problems({ a: { $foo: 1 }, b: { $in: 1 }, $or: 1 }), [
    { path: 'filter.a.$foo', message: 'unknown operator $foo' },
    { path: 'filter.b.$in', message: 'must be an array' },
    { path: 'filter.$or', message: 'must be an array of filter objects' },
  ]);
});

t.test('validateFilter bounds the depth', async (t) => {
  const nest = (levels: number, leaf: unknown): Record<string, unknown> => {
    let f: unknown = leaf;
    for (let i = 0; i < levels; i++) f = { a: f };
    return f as Record<string, unknown>;
  };
  t.same(validateFilter(nest(FILTER_MAX_DEPTH, 1)), [], 'exactly the maximum depth is fine');
  const deep = validateFilter(nest(FILTER_MAX_DEPTH + 1, 1));
  t.equal(deep.length, 1);
  t.equal(deep[0]?.path, `filter${'.a'.repeat(FILTER_MAX_DEPTH)}`);
  t.match(deep[0]?.message, /maximum depth of 10/);
  t.equal(validateFilter(nest(10_000, 1)).length, 1, 'a very deep filter is reported once, without recursing all the way');

  t.same(validateFilter(nest(FILTER_MAX_DEPTH - 1, [1])), [], 'an array literal counts as a level');
  t.equal(validateFilter(nest(FILTER_MAX_DEPTH - 1, [[1]]))[0]?.path, `filter${'.a'.repeat(FILTER_MAX_DEPTH - 1)}[0]`);
  t.equal(validateFilter(nest(FILTER_MAX_DEPTH - 1, { $in: [1] })).length, 1, 'an operator argument counts');
  t.same(validateFilter(nest(FILTER_MAX_DEPTH - 2, { $in: [1] })), []);
  t.equal(validateFilter(nest(FILTER_MAX_DEPTH - 1, { $or: [{ b: 1 }] })).length, 1, 'the $or array counts');
  t.same(validateFilter(nest(FILTER_MAX_DEPTH - 3, { $or: [{ b: 1 }] })), []);

  let ors: Record<string, unknown> = { x: 1 };
  for (let i = 0; i < 6; i++) ors = { $or: [ors] };
  t.match(validateFilter(ors), [{ path: /^filter(\.\$or\[0\])+$/, message: /maximum depth/ }]);
});

t.test('isConfiguredTopic: TOPICS entries may be wildcards; destinations may subscribe with a covering wildcard', async (t) => {
  const { isConfiguredTopic } = await import('../src/routing/match.ts');
  t.ok(isConfiguredTopic(['*'], 'anything'));
  t.ok(isConfiguredTopic(['user.created', 'order.*'], 'user.created'));
  t.ok(isConfiguredTopic(['user.created', 'order.*'], 'order.paid'), 'matches a wildcard entry');
  t.notOk(isConfiguredTopic(['user.created', 'order.*'], 'invoice.sent'));
  t.ok(isConfiguredTopic(['user.created', 'user.deleted'], 'user.*'), 'a wildcard covering a configured topic');
  t.notOk(isConfiguredTopic(['user.created'], 'order.*'), 'a wildcard covering nothing configured');
});
