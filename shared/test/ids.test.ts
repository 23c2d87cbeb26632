import t from 'tap';
import { uuidv7 } from '../src/ids.ts';

t.test('uuidv7 ids are RFC 9562 version 7 and sort by creation time', async (t) => {
  const a = uuidv7(1_700_000_000_000);
  const b = uuidv7(1_700_000_000_001);
  t.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.ok(a < b, 'a later millisecond sorts after');
  t.equal(new Set(Array.from({ length: 1000 }, () => uuidv7())).size, 1000, 'no collisions');
});

t.test('uuidv7 carries its millisecond in the first 48 bits, and random bits in the rest', async (t) => {
  const at = Date.parse('2026-11-23T01:02:03.456Z');
  const id = uuidv7(at);
  t.equal(Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16), at, 'the timestamp reads back');
  t.equal(uuidv7(0).slice(0, 13), '00000000-0000', 'padded to 48 bits');
  const tails = new Set(Array.from({ length: 1000 }, () => uuidv7(at).slice(15)));
  t.equal(tails.size, 1000, 'ids of the same millisecond differ');
  // Each hex digit of the random part takes all 16 values over 1000 ids (variant digit: its 4).
  const digits = [...tails].map((s) => s.replace(/-/g, ''));
  for (let i = 0; i < 18; i++) {
    const seen = new Set(digits.map((d) => d[i])).size;
    t.equal(seen, i === 3 ? 4 : 16, `digit ${i} of the random part`);
  }
});
