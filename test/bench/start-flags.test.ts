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

t.test("npm start runs with the image's malloc settings, which the bench applies to it", async (t) => {
  const start = readFileSync(join(ROOT, 'infra/start.sh'), 'utf8');
  const image = [...readFileSync(join(ROOT, 'Dockerfile'), 'utf8').matchAll(/^ENV (MALLOC_\w+)=(\S+)$/gm)];
  t.ok(image.length >= 3, `the image sets ${image.map((m) => m[1]).join(', ')}`);
  const exported = /^export ((?:MALLOC_\w+=\S+ ?)+)$/m.exec(start)?.[1]?.split(' ') ?? [];
  t.same(exported.sort(), image.map((m) => `${m[1]}=${m[2]}`).sort(), 'infra/start.sh exports the same values');
});

t.test('a script without the line is refused', async (t) => {
  t.same(startFlags('#!/bin/sh\nexec node --a=1 --b dist/services/embedded/src/main.js "$@"\n'), ['--a=1', '--b']);
  t.throws(() => startFlags('#!/bin/sh\nexec node dist/services/gateway/src/main.js\n'), /no `exec node/);
  t.throws(() => startFlags('#!/bin/sh\nnode --a=1 dist/services/embedded/src/main.js\n'), /no `exec node/);
});
