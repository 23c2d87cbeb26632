// The rule a listing page follows under API_PAGE_MAX_BYTES (the listings themselves:
// services/gateway/test/page-bytes.test.ts, on Postgres and PGlite).
import t from 'tap';
import { bytesCut } from '../../src/queries/sql.ts';

t.test('a page takes items while those before each stay under the bound', async (t) => {
  t.equal(bytesCut([], 100), 0, 'nothing to take');
  t.equal(bytesCut([10, 20, 30], 100), 3, 'all under the bound');
  t.equal(bytesCut([40, 40, 40, 40], 100), 3, 'the item that crosses the bound is the last one');
  t.equal(bytesCut([50, 50, 1], 100), 2, 'bytes reaching the bound exactly stop the page');
  t.equal(bytesCut([50, 49, 1, 1], 100), 3, 'one byte under it takes one more');
  t.equal(bytesCut([500, 1], 100), 1, 'an item over the bound comes alone');
  t.equal(bytesCut([0, 0, 0], 1), 3, 'items without payload never stop a page');
  t.equal(bytesCut([1, 500, 1], 100), 2, 'a large item after small ones ends their page');
});

t.test('at most the bound plus one item, and never an empty page', async (t) => {
  const sizes = Array.from({ length: 200 }, (_, i) => (i * 7919) % 1000);
  for (const bound of [1, 999, 1000, 4096, 50_000]) {
    let rest = sizes;
    let pages = 0;
    let taken = 0;
    while (rest.length) {
      const n = bytesCut(rest, bound);
      if (n < 1) {
        t.fail(`bound ${bound}: an empty page`);
        break;
      }
      const page = rest.slice(0, n);
      const before = page.slice(0, -1).reduce((a, b) => a + b, 0);
      if (before >= bound) t.fail(`bound ${bound}: ${before} bytes before the last item`);
      if (n < rest.length && before + (page.at(-1) as number) < bound) t.fail(`bound ${bound}: stopped short of the bound`);
      rest = rest.slice(n);
      taken += n;
      pages++;
    }
    t.equal(taken, sizes.length, `bound ${bound}: every item on one of ${pages} pages`);
  }
});
