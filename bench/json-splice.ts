// The router's JSON splice (shared/src/bus/record-codec.ts) against JSON.stringify per record, on one
// fetched batch fanned out: 100 events x 10 destinations, at three event sizes. In-process, no I/O:
//   bash infra/run.sh node bench/json-splice.ts
import { jsonOnce, spliceJson } from '../shared/src/bus/record-codec.ts';
for (const size of [200, 2_000, 20_000]) {
  const events = Array.from({ length: 100 }, (_, i) => ({
    id: `e${i}`,
    tenant_id: 't',
    topic: 'x',
    time: new Date().toISOString(),
    eligible_for_retry: true,
    metadata: null,
    data: { pad: 'x'.repeat(size), n: i },
  }));
  const dests = Array.from({ length: 10 }, (_, i) => ({
    id: `d${i}`,
    type: 'webhook',
    config: { url: `https://example.com/${i}` },
    sealed: 'y'.repeat(200),
  }));
  const recs = events.flatMap((event) => dests.map((destination) => ({ event, destination, attempt_number: 1, manual: false })));
  const time = (f: () => void) => {
    for (let i = 0; i < 20; i++) f();
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) f();
    return (performance.now() - t0) / 200;
  };
  const plain = time(() => {
    for (const r of recs) JSON.stringify(r);
  });
  const spliced = time(() => {
    const j = jsonOnce();
    for (const r of recs) spliceJson(r, ['event', 'destination'], j);
  });
  console.log(`${size} B data, 100 events x 10 destinations: stringify ${plain.toFixed(2)} ms, splice ${spliced.toFixed(2)} ms per batch`);
}
