import t from 'tap';
import { mergePatch } from '../src/merge-patch.ts';

// The examples of RFC 7396, appendix A.
const cases: [unknown, unknown, unknown][] = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [
    ['a', 'b'],
    ['c', 'd'],
    ['c', 'd'],
  ],
  [{ a: 'b' }, ['c'], ['c']],
  [{ a: 'foo' }, null, null],
  [{ a: 'foo' }, 'bar', 'bar'],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: 'b', c: null }, { a: 'b' }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  [{ a: 1 }, {}, { a: 1 }],
];

for (const [target, patch, expected] of cases) {
  t.same(mergePatch(target, patch), expected, `${JSON.stringify(target)} + ${JSON.stringify(patch)}`);
}

t.test('the target is not mutated', async (t) => {
  const target = { a: { b: 1 } };
  mergePatch(target, { a: { b: 2 } });
  t.same(target, { a: { b: 1 } });
});
