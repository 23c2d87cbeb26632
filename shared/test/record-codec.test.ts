import t from 'tap';
import { JsonText, jsonOf, jsonOnce, spliceJson } from '../src/bus/record-codec.ts';

t.test('spliceJson parses to what JSON.stringify gives', async (t) => {
  const event = { id: 'e"1', data: { a: [1, 2, { b: null }], s: 'quote " and \\ and \u2028' }, metadata: null };
  const destination = { id: 'd1', config: { url: 'https://x' } };
  const records = [
    { event, destination, attempt_number: 1, manual: false },
    { event, destination, attempt_number: 2, manual: true, due_at: '2026-11-22T00:00:00Z', parked: undefined },
    { event, destination: undefined, attempt_number: 3 },
    { event: null, destination },
    { event, destination },
    { other: 1 },
  ];
  for (const r of records) {
    const spliced = spliceJson(r, ['event', 'destination'], jsonOnce());
    t.same(JSON.parse(spliced), JSON.parse(JSON.stringify(r)), spliced.slice(0, 60));
  }
});

t.test('jsonOnce writes an object once and hands back the same text', async (t) => {
  let calls = 0;
  const event = {
    toJSON() {
      calls++;
      return { id: 'e1' };
    },
  };
  const json = jsonOnce();
  const a = spliceJson({ event, n: 1 }, ['event'], json);
  const b = spliceJson({ event, n: 2 }, ['event'], json);
  t.equal(calls, 1, 'the shared object was serialised once for both records');
  t.same(JSON.parse(a), { event: { id: 'e1' }, n: 1 });
  t.same(JSON.parse(b), { event: { id: 'e1' }, n: 2 });
});

t.test('jsonOf writes JsonText when asked, anything else as JSON', async (t) => {
  let written = 0;
  const text = new JsonText(() => {
    written++;
    return '{"x":1}';
  });
  t.equal(written, 0, 'nothing is written before the value is needed');
  t.equal(jsonOf(text), '{"x":1}');
  t.equal(written, 1);
  t.equal(jsonOf({ x: 1 }), '{"x":1}');
  t.equal(jsonOf('s'), '"s"');
});
