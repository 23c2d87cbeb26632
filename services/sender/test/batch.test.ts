// The coalescer of the batched types (src/batch.ts) and the key concurrency they get: what goes
// together, what goes alone, when a batch leaves, and that every entry keeps its own outcome. The
// batch request is the far edge here (a function that records what it was given); the conformance
// suite runs the same against the peers.
import t from 'tap';
import { createCoalescer } from '../src/batch.ts';
import { failed, type Outcome, succeeded } from '../src/sender.ts';
import { keyConcurrencyOf, partitionConcurrencyOf } from '../src/senders.ts';

/** A coalescer whose batches are recorded and answered by `answer` (every entry succeeds by default). */
function recorder(limits: Parameters<typeof createCoalescer>[0], answer?: (entries: string[]) => Outcome[] | Promise<Outcome[]>) {
  const batches: string[][] = [];
  const c = createCoalescer<string>(limits, async (entries) => {
    batches.push(entries);
    return answer ? answer(entries) : entries.map((e) => succeeded({ entry: e }));
  });
  return { c, batches };
}

const never = () => new AbortController().signal;

t.test('entries added together share one request, each with its own outcome', async (t) => {
  const { c, batches } = recorder({ maxEntries: 10, maxBytes: 1000, waitMs: 5 });
  const outs = await Promise.all(['a', 'b', 'c'].map((e) => c.add(e, 1, never())));
  t.same(batches, [['a', 'b', 'c']]);
  t.same(
    outs.map((o) => o.response_data?.entry),
    ['a', 'b', 'c'],
  );
  t.equal(c.requests, 1);
});

t.test('a full batch leaves at once, by entries or by bytes', async (t) => {
  // A wait no test would sit through: only fullness can send these.
  const { c, batches } = recorder({ maxEntries: 3, maxBytes: 100, waitMs: 3_600_000 });
  await Promise.all(['a', 'b', 'c'].map((e) => c.add(e, 1, never())));
  t.same(batches, [['a', 'b', 'c']], 'three entries fill it');
  await Promise.all([c.add('d', 60, never()), c.add('e', 40, never())]);
  t.same(batches[1], ['d', 'e'], '100 bytes fill it');
});

t.test('an entry that would overflow the bytes sends the waiting batch first', async (t) => {
  const { c, batches } = recorder({ maxEntries: 10, maxBytes: 100, waitMs: 3_600_000 });
  const first = c.add('a', 70, never());
  const second = c.add('b', 50, never());
  await first;
  t.same(batches, [['a']], 'a left alone, b waits');
  await c.drain();
  await second;
  t.same(batches, [['a'], ['b']]);
});

t.test('an entry larger than one entry may be goes alone, without disturbing the waiting batch', async (t) => {
  const { c, batches } = recorder({ maxEntries: 10, maxBytes: 100, maxEntryBytes: 30, waitMs: 3_600_000 });
  const waiting = c.add('a', 10, never());
  await c.add('big', 40, never());
  t.same(batches, [['big']]);
  await c.drain();
  await waiting;
  t.same(batches, [['big'], ['a']]);
});

t.test('a lone entry leaves after the wait', async (t) => {
  const { c, batches } = recorder({ maxEntries: 10, maxBytes: 100, waitMs: 1 });
  await c.add('a', 1, never());
  t.same(batches, [['a']]);
});

t.test('one failed entry fails alone; a thrown batch rejects each of its entries', async (t) => {
  const { c } = recorder({ maxEntries: 3, maxBytes: 100, waitMs: 5 }, (entries) =>
    entries.map((e) => (e === 'bad' ? failed('throttled', 'slow down') : succeeded())),
  );
  const outs = await Promise.all(['a', 'bad', 'c'].map((e) => c.add(e, 1, never())));
  t.same(
    outs.map((o) => o.status),
    ['success', 'failed', 'success'],
  );
  const thrower = createCoalescer<string>({ maxEntries: 2, maxBytes: 100, waitMs: 5 }, async () => {
    throw new Error('a bug');
  });
  const settled = await Promise.allSettled([thrower.add('a', 1, never()), thrower.add('b', 1, never())]);
  t.same(
    settled.map((s) => s.status),
    ['rejected', 'rejected'],
  );
});

t.test('an entry whose deadline passes while it waits leaves as a timeout; the batch goes without it', async (t) => {
  const { c, batches } = recorder({ maxEntries: 10, maxBytes: 100, waitMs: 3_600_000 });
  const deadline = new AbortController();
  const late = c.add('late', 1, deadline.signal);
  const kept = c.add('kept', 1, never());
  deadline.abort();
  t.match(await late, { status: 'failed', response_data: { reason: 'timeout' } });
  await c.drain();
  t.match(await kept, { status: 'success' });
  t.same(batches, [['kept']]);
  t.match(await c.add('gone', 1, deadline.signal), { status: 'failed', response_data: { reason: 'timeout' } }, 'already past: never sent');
  t.equal(batches.length, 1);
});

t.test('a batch in flight is aborted by its entries’ earliest deadline', async (t) => {
  const seen: AbortSignal[] = [];
  const c = createCoalescer<string>(
    { maxEntries: 2, maxBytes: 100, waitMs: 5 },
    (entries, signal) =>
      new Promise((resolve) => {
        seen.push(signal);
        signal.addEventListener('abort', () => resolve(entries.map(() => failed('timeout', 'aborted'))));
      }),
  );
  const first = new AbortController();
  const outs = Promise.all([c.add('a', 1, first.signal), c.add('b', 1, never())]);
  first.abort();
  t.same(
    (await outs).map((o) => o.response_data?.reason),
    ['timeout', 'timeout'],
  );
  t.ok(seen[0]?.aborted);
});

t.test('drain sends what waits and waits for every batch in flight', async (t) => {
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const c = createCoalescer<string>({ maxEntries: 10, maxBytes: 100, waitMs: 3_600_000 }, async (entries) => {
    await gate;
    return entries.map(() => succeeded());
  });
  const out = c.add('a', 1, never());
  let drained = false;
  const d = c.drain().then(() => {
    drained = true;
  });
  await new Promise((r) => setImmediate(r));
  t.equal(drained, false, 'still in flight');
  release();
  await d;
  t.match(await out, { status: 'success' });
});

/** A coalescer whose requests are each answered (all entries succeed) only when the test releases them. */
function held(limits: Parameters<typeof createCoalescer>[0]) {
  const batches: string[][] = [];
  const releases: Array<() => void> = [];
  const c = createCoalescer<string>(limits, (entries) => {
    batches.push(entries);
    return new Promise((resolve) => releases.push(() => resolve(entries.map(() => succeeded()))));
  });
  return { c, batches, release: (i: number) => releases[i]?.() };
}

/** Resolves after every timer of `ms` or less armed before it has fired (Node runs timers in due order). */
const after = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('while a request is out, the next batch fills and goes when it answers', async (t) => {
  const { c, batches, release } = held({ maxEntries: 100, maxBytes: 1000, waitMs: 1, maxInFlight: 1, slotWaitMs: 3_600_000 });
  const a = c.add('a', 1, never());
  await after(2);
  t.same(batches, [['a']], 'a lone entry left after the wait');
  const rest = ['b', 'c'].map((e) => c.add(e, 1, never()));
  await after(2);
  rest.push(c.add('d', 1, never()));
  await after(2);
  t.same(batches, [['a']], 'past their wait, b, c and d wait for the request out');
  t.equal(c.inFlight, 1);
  release(0);
  await a;
  await after(0);
  t.same(batches[1], ['b', 'c', 'd'], 'the answer sent them as one batch');
  release(1);
  t.same(
    (await Promise.all(rest)).map((o) => o.status),
    ['success', 'success', 'success'],
  );
  t.equal(c.inFlight, 0);
});

t.test('a full batch goes at once, whatever is out', async (t) => {
  const { c, batches, release } = held({ maxEntries: 2, maxBytes: 1000, waitMs: 1, maxInFlight: 1, slotWaitMs: 3_600_000 });
  const first = c.add('a', 1, never());
  await after(2);
  const full = [c.add('b', 1, never()), c.add('c', 1, never())];
  t.same(batches, [['a'], ['b', 'c']], 'b and c filled a batch and left with a still out');
  release(0);
  release(1);
  await Promise.all([first, ...full]);
});

t.test('more requests out allowed: batches wait only once that many are out', async (t) => {
  const { c, batches, release } = held({ maxEntries: 100, maxBytes: 1000, waitMs: 1, maxInFlight: 2, slotWaitMs: 3_600_000 });
  const outs = [c.add('a', 1, never())];
  await after(2);
  outs.push(c.add('b', 1, never()));
  await after(2);
  t.same(batches, [['a'], ['b']], 'two requests out');
  outs.push(c.add('c', 1, never()));
  await after(2);
  t.equal(batches.length, 2, 'c waits for one of them');
  release(1);
  await outs[1];
  await after(0);
  t.same(batches[2], ['c']);
  release(0);
  release(2);
  await Promise.all(outs);
});

t.test('a batch waits for a request out at most slotWaitMs', async (t) => {
  const { c, batches, release } = held({ maxEntries: 100, maxBytes: 1000, waitMs: 1, maxInFlight: 1, slotWaitMs: 5 });
  const first = c.add('a', 1, never());
  await after(2);
  const late = c.add('b', 1, never());
  while (batches.length < 2) await after(1);
  t.same(batches, [['a'], ['b']], 'b went');
  t.equal(c.inFlight, 2, 'while a was still out');
  release(1);
  t.match(await late, { status: 'success' });
  release(0);
  await first;
});

t.test('drain sends a batch waiting for a request slot, and waits for it', async (t) => {
  const { c, batches, release } = held({ maxEntries: 100, maxBytes: 1000, waitMs: 1, maxInFlight: 1, slotWaitMs: 3_600_000 });
  const first = c.add('a', 1, never());
  await after(2);
  const waiting = c.add('b', 1, never());
  await after(2);
  let drained = false;
  const d = c.drain().then(() => {
    drained = true;
  });
  t.same(batches, [['a'], ['b']], 'drain sent b at once');
  release(1);
  t.match(await waiting, { status: 'success' });
  await after(0);
  t.equal(drained, false, 'a is still out');
  release(0);
  await Promise.all([first, d]);
  t.equal(c.inFlight, 0);
});

t.test('batched types get room for full batches, never the whole partition', async (t) => {
  t.equal(keyConcurrencyOf('webhook', 64, 8), 8, 'other types: DESTINATION_CONCURRENCY');
  t.equal(keyConcurrencyOf('sqs', 64, 8), 56, 'sqs: 8 batches of 10 wanted, 56 left by the others’ share');
  t.equal(keyConcurrencyOf('sqs', 1000, 2), 20, 'sqs: two full batches');
  t.equal(keyConcurrencyOf('kinesis', 64, 8), 56);
  t.equal(keyConcurrencyOf('kinesis', 8, 8), 8, 'never below DESTINATION_CONCURRENCY');
});

t.test('kinesis partitions get room for bigger batches; the others keep SENDER_CONCURRENCY', async (t) => {
  t.equal(partitionConcurrencyOf('webhook', 64), 64);
  t.equal(partitionConcurrencyOf('sqs', 64), 64, 'sqs: ten a request fit already');
  t.equal(partitionConcurrencyOf('kinesis', 64), 256, 'kinesis: four times');
  t.equal(partitionConcurrencyOf('kinesis', 200), 500, 'never beyond one PutRecords');
  t.equal(partitionConcurrencyOf('kinesis', 1000), 1000, 'never below SENDER_CONCURRENCY');
  t.equal(keyConcurrencyOf('kinesis', partitionConcurrencyOf('kinesis', 64), 8), 248, "a kinesis destination: all but the others' share");
});
