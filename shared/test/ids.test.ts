import t from 'tap';
import { uuidv7 } from '../src/ids.ts';

t.test('uuidv7 ids are RFC 9562 version 7 and sort by creation time', async (t) => {
  const a = uuidv7(1_700_000_000_000);
  const b = uuidv7(1_700_000_000_001);
  t.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.ok(a < b, 'a later millisecond sorts after');
  t.equal(new Set(Array.from({ length: 1000 }, () => uuidv7())).size, 1000, 'no collisions');
});
