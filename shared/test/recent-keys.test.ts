// The memory of keys seen lately (recent-keys.ts: the attempts service's events stored, the sender's
// deliveries made): the last `max` distinct keys, the oldest evicted first, a repeat keeping its place.
import t from 'tap';
import { RecentKeys } from '../src/recent-keys.ts';

t.test('holds the last max distinct keys, evicting the oldest first', async (t) => {
  const keys = new RecentKeys(3);
  for (const k of ['a', 'b', 'c']) keys.add(k);
  t.same(
    ['a', 'b', 'c'].map((k) => keys.has(k)),
    [true, true, true],
  );
  keys.add('d');
  t.notOk(keys.has('a'), 'the oldest went');
  t.same(
    ['b', 'c', 'd'].map((k) => keys.has(k)),
    [true, true, true],
  );
  t.equal(keys.size, 3);
});

t.test('a key added again keeps its place: it is evicted when its first add would be', async (t) => {
  const keys = new RecentKeys(3);
  for (const k of ['a', 'b', 'a', 'c', 'a']) keys.add(k);
  t.equal(keys.size, 3, 'repeats take no room');
  keys.add('d');
  t.notOk(keys.has('a'), 'a was the first added');
  t.ok(keys.has('b') && keys.has('c') && keys.has('d'));
});

t.test('stays at max over many rounds of the ring', async (t) => {
  const keys = new RecentKeys(1000);
  for (let i = 0; i < 25_500; i++) keys.add(`e${i}`);
  t.equal(keys.size, 1000);
  t.ok(keys.has('e24500') && keys.has('e25499'), 'the last thousand are held');
  t.notOk(keys.has('e24499'), 'the one before them is not');
});

t.test('max must be a positive integer', async (t) => {
  t.throws(() => new RecentKeys(0), RangeError);
  t.throws(() => new RecentKeys(2.5), RangeError);
});
