// bench/heap-summary.mjs against a real heap snapshot written by this Node: the snapshot format
// it reads (node fields, types, strings) is V8's, and changes with Node upgrades.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '@switchyard/shared/testing/index.ts';

t.test('sums a snapshot by kind: objects by constructor, large strings apart', async (t) => {
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'heap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // 1,000 objects of one class and five distinct 30 KB strings, alive when the snapshot is taken.
  const script = `
    class SummaryMarker { constructor(i) { this.i = i; } }
    globalThis.keep = {
      markers: Array.from({ length: 1000 }, (_, i) => new SummaryMarker(i)),
      big: Array.from({ length: 5 }, (_, i) => String(i).repeat(30000)),
    };
    require('node:v8').writeHeapSnapshot(${JSON.stringify(join(dir, 'test.heapsnapshot'))});
  `;
  execFileSync(process.execPath, ['-e', script]);
  t.same(readdirSync(dir), ['test.heapsnapshot']);

  const out = execFileSync(process.execPath, [join(ROOT, 'bench/heap-summary.mjs'), join(dir, 'test.heapsnapshot'), '500'], {
    encoding: 'utf8',
  });
  const [head = '', , ...rows] = out.trim().split('\n');
  const m = /^\s*([\d.]+) MB in all; strings over 20 KB: ([\d.]+) MB$/.exec(head);
  t.ok(m, `a total line: ${head}`);
  t.ok(Number(m?.[1]) > 0.5, 'a total of the whole heap');
  t.ok(Number(m?.[2]) >= 0.14, 'the five 30 KB strings counted as large');
  const marker = rows.find((r) => r.endsWith('object: SummaryMarker'));
  t.ok(marker, 'a row for the class');
  t.equal(marker?.trim().split(/\s+/)[1], '1000', 'counting its 1,000 objects');
  const sizes = rows.map((r) => Number(r.trim().split(/\s+/)[0]));
  t.same(
    sizes,
    [...sizes].sort((a, b) => b - a),
    'largest first',
  );
});

t.test('without a file: usage and exit code 2', async (t) => {
  try {
    execFileSync(process.execPath, [join(ROOT, 'bench/heap-summary.mjs')], { stdio: 'pipe' });
    t.fail('should exit non-zero');
  } catch (err) {
    const e = err as { status: number; stderr: Buffer };
    t.equal(e.status, 2);
    t.match(e.stderr.toString(), /usage: node bench\/heap-summary\.mjs/);
  }
});
