// infra/tap-summary.ts, which ends every test run with the line CI reads: leaf points counted, and
// each failed one named by its path just before that line, so a run's tail says what failed.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '@switchyard/shared/testing/index.ts';

const stream = [
  '# Subtest: test/a.test.ts',
  '    # Subtest: outer',
  '        ok 1 - fine',
  '        not ok 2 - broken one',
  '          ---',
  '          diff: |',
  '            ok 1 - quoted in a diagnostic, not a point',
  '          ...',
  '        1..2',
  '    not ok 1 - outer # time=3ms',
  '    # Subtest: second',
  '        ok 1 - kept',
  '        1..1',
  '    ok 2 - second',
  '    not ok 3 - a subtest without points timed out # time=30000ms',
  '    ok 4 - not yet # TODO',
  '    1..4',
  '    # time=5ms',
  'not ok 1 - test/a.test.ts # time=5ms',
  '# Subtest: test/b.test.ts',
  '    ok 1 - y',
  '    1..1',
  '    # time=1ms',
  'ok 2 - test/b.test.ts',
].join('\n');

const summarize = (...args: string[]) =>
  execFileSync(process.execPath, [join(ROOT, 'infra/tap-summary.ts'), ...args], { input: stream, encoding: 'utf8' });

t.test('leaf points are counted and each failed one is named by its path', async (t) => {
  const out = summarize('--quiet').trimEnd().split('\n');
  t.same(out, [
    'failed: test/a.test.ts > outer > broken one',
    'failed: test/a.test.ts > a subtest without points timed out',
    '',
    '3 passed, 2 failed, 1 skipped',
  ]);
});

t.test('without --quiet the stream is echoed first', async (t) => {
  const out = summarize();
  t.ok(out.startsWith(`${stream}\n`), 'the stream, unchanged');
  t.match(out, /failed: test\/a\.test\.ts > a subtest without points timed out\n\n3 passed, 2 failed, 1 skipped\n$/);
});
