// Merging the batches of several partitions into one handler call (shared/src/bus/coalesce.ts).
import t from 'tap';
import { coalesceBatches } from '../src/bus/coalesce.ts';

/** A handler that records each call and fails any call holding a record named in `bad`. */
function recorder(bad: string[] = []) {
  const calls: string[][] = [];
  const handle = async (records: string[]) => {
    calls.push(records);
    await new Promise((r) => setImmediate(r));
    if (records.some((r) => bad.includes(r))) throw new Error(`bad record in ${records.join(',')}`);
  };
  return { calls, handle };
}

const settled = (ps: Promise<void>[]) => Promise.allSettled(ps).then((rs) => rs.map((r) => r.status));

t.test('batches handed over in one turn of the event loop become one call, in the order given', async (t) => {
  const { calls, handle } = recorder();
  const merged = coalesceBatches(handle, 100);
  t.same(await settled([merged(['a1', 'a2']), merged(['b1']), merged(['c1', 'c2'])]), ['fulfilled', 'fulfilled', 'fulfilled']);
  t.same(calls, [['a1', 'a2', 'b1', 'c1', 'c2']]);
});

t.test('batches of different turns are separate calls, and a call settles only its own batches', async (t) => {
  const { calls, handle } = recorder();
  const merged = coalesceBatches(handle, 100);
  const first = merged(['a']);
  await new Promise((r) => setImmediate(r));
  const second = merged(['b']);
  await Promise.all([first, second]);
  t.same(calls, [['a'], ['b']]);
});

t.test('a call gets at most maxRecords records (a larger batch alone)', async (t) => {
  const { calls, handle } = recorder();
  const merged = coalesceBatches(handle, 4);
  await Promise.all([merged(['a1', 'a2', 'a3']), merged(['b1']), merged(['c1', 'c2']), merged(['d1', 'd2', 'd3', 'd4', 'd5'])]);
  t.same(calls, [
    ['a1', 'a2', 'a3', 'b1'],
    ['c1', 'c2'],
    ['d1', 'd2', 'd3', 'd4', 'd5'],
  ]);
});

t.test('after a merged call fails each batch is handled alone: only the bad one fails', async (t) => {
  const { calls, handle } = recorder(['b2']);
  const merged = coalesceBatches(handle, 100);
  t.same(await settled([merged(['a1']), merged(['b1', 'b2']), merged(['c1'])]), ['fulfilled', 'rejected', 'fulfilled']);
  t.same(calls, [['a1', 'b1', 'b2', 'c1'], ['a1'], ['b1', 'b2'], ['c1']]);
  await t.rejects(merged(['b2']), /bad record in b2/, 'the batch alone fails with its own error');
});

t.test('a batch that was alone is not handled twice when it fails', async (t) => {
  const { calls, handle } = recorder(['x']);
  const merged = coalesceBatches(handle, 100);
  await t.rejects(merged(['x']), /bad record in x/);
  t.same(calls, [['x']]);
});

t.test('a merged call that fails is reported even when every batch then succeeds alone', async (t) => {
  const calls: string[][] = [];
  let failures = 1; // a passing fault: only the first call fails
  const handle = async (records: string[]) => {
    calls.push(records);
    if (failures-- > 0) throw new Error('connection reset');
  };
  const heard: Array<{ message: string; batches: number; records: number }> = [];
  const merged = coalesceBatches(handle, 100, (err, batches, records) => heard.push({ message: (err as Error).message, batches, records }));
  t.same(await settled([merged(['a1', 'a2']), merged(['b1'])]), ['fulfilled', 'fulfilled']);
  t.same(calls, [['a1', 'a2', 'b1'], ['a1', 'a2'], ['b1']]);
  t.same(heard, [{ message: 'connection reset', batches: 2, records: 3 }]);
});
