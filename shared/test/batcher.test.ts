import t from 'tap';
import { createBatcher } from '../src/batcher.ts';

t.test('a lone call flushes at once; concurrent calls share a flush', async (t) => {
  const flushes: number[][] = [];
  const add = createBatcher(async (items: number[]) => {
    flushes.push(items);
    await new Promise((r) => setTimeout(r, 20));
    return items.map((i) => i * 10);
  });
  t.equal(await add(1), 10);
  const results = await Promise.all([2, 3, 4, 5].map((i) => add(i)));
  t.same(results, [20, 30, 40, 50], 'each caller gets its own result');
  t.same(flushes, [[1], [2], [3, 4, 5]], 'calls made during a flush go out together in the next');
});

t.test('a failed flush fails only its own callers; max batch size is kept', async (t) => {
  let n = 0;
  const add = createBatcher(async (items: number[]) => {
    n++;
    if (items.includes(13)) throw new Error('unlucky');
    return items;
  }, 2);
  const settled = await Promise.allSettled([1, 13, 14, 2, 3].map((i) => add(i)));
  t.same(
    settled.map((s) => s.status),
    ['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled'],
  );
  t.equal(n, 3, '[1], [13, 14], [2, 3]');
});
