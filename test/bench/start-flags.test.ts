// The bench runs embedded mode with the V8 flags users get from `npm start`: read from
// infra/start.sh itself, and refused loudly when the script no longer says them the same way.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startFlags } from '../../bench/lib/stack.ts';
import { ROOT } from '../../shared/src/testing/index.ts';

t.test("npm start's flags are read from infra/start.sh", async (t) => {
  const flags = startFlags(readFileSync(join(ROOT, 'infra/start.sh'), 'utf8'));
  t.ok(flags.length > 0, `flags: ${flags.join(' ')}`);
  t.ok(
    flags.every((f) => f.startsWith('--')),
    'each is a node flag',
  );
  t.ok(
    flags.some((f) => f.startsWith('--max-semi-space-size=')),
    'the young generation is set',
  );
  t.ok(
    flags.some((f) => f.startsWith('--max-old-space-size=')),
    'the old generation is set',
  );
});

t.test('a script without the line is refused', async (t) => {
  t.same(startFlags('#!/bin/sh\nexec node --a=1 --b dist/services/embedded/src/main.js "$@"\n'), ['--a=1', '--b']);
  t.throws(() => startFlags('#!/bin/sh\nexec node dist/services/gateway/src/main.js\n'), /no `exec node/);
  t.throws(() => startFlags('#!/bin/sh\nnode --a=1 dist/services/embedded/src/main.js\n'), /no `exec node/);
});
