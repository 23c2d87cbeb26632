// `npm run build`: the type-stripped JavaScript tree production runs. Unit checks of the transform
// here; test/build/e2e-skeleton.test.ts runs the skeleton suite against a built tree.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '@switchyard/shared/testing/index.ts';
import { toJavaScript } from '../../infra/build.ts';

t.test('types are stripped in place and every local import points at its .js file', async (t) => {
  const source = [
    "import type { A } from './a.ts';",
    "import { b, type C } from '@switchyard/shared/b.ts';",
    'import {',
    '  d,',
    '} from "./d.ts";',
    "export { e } from './e.ts';",
    "import './side-effect.ts';",
    "const lazy = await import('./lazy.ts');",
    "import pg from 'pg';",
    "const s: string = 'a .ts string stays';",
    'export function f(x: number): number { return x as number; }',
  ].join('\n');
  const js = toJavaScript(source);
  t.equal(js.split('\n').length, source.split('\n').length, 'lines are kept (stack traces point at the same lines)');
  t.match(js, /from '@switchyard\/shared\/b\.js'/);
  t.match(js, /from "\.\/d\.js"/, 'multi-line imports, double quotes');
  t.match(js, /export \{ e \} from '\.\/e\.js'/);
  t.match(js, /import '\.\/side-effect\.js'/);
  t.match(js, /import\('\.\/lazy\.js'\)/);
  t.match(js, /from 'pg'/, 'packages untouched');
  t.match(js, /'a \.ts string stays'/, 'other strings untouched');
  t.notMatch(js, /: number|: string|import type|type C/, 'no type left');
});

t.test('the built tree resolves its own workspaces and starts without type stripping', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'sy-build-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  execFileSync(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'infra/build.ts'), '--out', out], { stdio: 'pipe' });
  for (const f of [
    'services/gateway/src/main.js',
    'services/embedded/src/main.js',
    'shared/src/db/migrate-cli.js',
    'shared/schemas/event.schema.json',
  ]) {
    t.ok(existsSync(join(out, f)), f);
  }
  t.equal(
    realpathSync(join(out, 'node_modules/@switchyard/shared')),
    realpathSync(join(out, 'shared')),
    'workspaces resolve inside the tree',
  );
  t.notMatch(readFileSync(join(out, 'shared/src/runtime.js'), 'utf8'), /\.ts['"]/, 'no import of a .ts file is left');
  // --no-experimental-strip-types: loading any .ts file would fail, so this proves none is loaded.
  const loaded = execFileSync(
    process.execPath,
    [
      '--no-experimental-strip-types',
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(join(out, 'services/gateway/src/app.js'))}); await import(${JSON.stringify(join(out, 'services/sender/src/service.js'))}); await import(${JSON.stringify(join(out, 'services/router/src/validate.js'))}); console.log('loaded');`,
    ],
    { encoding: 'utf8' },
  );
  t.equal(loaded.trim(), 'loaded', 'the services load from the built tree alone');
});
