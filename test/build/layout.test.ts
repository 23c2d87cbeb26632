// The layout's import rules (docs/architecture.md, "Layout"), checked over every tracked source file:
//   - a service imports no other service; services/embedded, the one-process mode, composes the
//     others through their public entry;
//   - shared/src imports no service: it holds what more than one of them uses (its tests may drive
//     one, as the embedded key rotation test does);
//   - bench/ imports a service through its public entry only, apart from the component
//     micro-benchmarks listed in BENCH_COMPONENTS;
//   - a package's published sources (packages/*/src) import no workspace: the client installs alone
//     (its scripts/, which generate it from the gateway's document, may).
// A service's public entry: src/service.ts (start), and the gateway's src/app.ts (build).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import t from 'tap';
import { ROOT } from '@switchyard/shared/testing/index.ts';

const PUBLIC_ENTRIES = [/^services\/[^/]+\/src\/service\.ts$/, /^services\/gateway\/src\/app\.ts$/];

/** bench/ files that measure one component of a service directly, and the modules they may import for it. */
const BENCH_COMPONENTS: Record<string, readonly string[]> = {
  // The per-type sender connectors against their peers, without the pipeline around them.
  'bench/senders.ts': [
    'services/sender/src/clients.ts',
    'services/sender/src/egress.ts',
    'services/sender/src/kafka/sender.ts',
    'services/sender/src/pubsub/sender.ts',
    'services/sender/src/sender.ts',
    'services/sender/src/servicebus/sender.ts',
  ],
  // The sender's per-destination state cache, alone.
  'bench/destination-state.ts': ['services/sender/src/destination-state.ts'],
};

/** Every module specifier a source imports or re-exports (static, dynamic and side-effect imports). */
export function specifiers(source: string): string[] {
  const out: string[] = [];
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])([^'"\n]+)\1/g;
  for (const m of source.matchAll(re)) out.push(m[2] as string);
  return out;
}

/** The repository path an import of `spec` from `file` lands on; undefined for a package outside the repository. */
function target(file: string, spec: string, workspaces: Map<string, string>): string | undefined {
  if (spec.startsWith('.')) return normalize(join(dirname(file), spec));
  const m = /^(@switchyard\/[^/]+)(\/.*)?$/.exec(spec);
  const dir = m ? workspaces.get(m[1] as string) : undefined;
  if (!dir) return undefined;
  // The workspaces export ./* from ./src/* (shared also ./schemas/*); a deep path names the file itself.
  const rest = (m?.[2] ?? '').slice(1);
  if (dir === 'shared' && !rest.startsWith('schemas/')) return `shared/src/${rest}`;
  return join(dir, rest);
}

const serviceOf = (path: string) => /^services\/([^/]+)\//.exec(path)?.[1];

/** What breaks the rules, as "file: specifier (why)", for sources given as path -> text. */
export function violations(sources: Map<string, string>, workspaces: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [file, source] of sources) {
    const from = serviceOf(file);
    for (const spec of specifiers(source)) {
      const to = target(file, spec, workspaces);
      if (to === undefined) continue;
      if (/^packages\/[^/]+\/src\//.test(file) && !to.startsWith(file.split('/').slice(0, 2).join('/'))) {
        out.push(`${file}: ${spec} (a package's sources import no workspace)`);
        continue;
      }
      const toService = serviceOf(to);
      const isPublic = PUBLIC_ENTRIES.some((p) => p.test(to));
      if (from && toService && toService !== from && !(from === 'embedded' && isPublic)) {
        out.push(`${file}: ${spec} (a service imports no other service)`);
      } else if (file.startsWith('shared/src/') && toService) {
        out.push(`${file}: ${spec} (shared imports no service)`);
      } else if (file.startsWith('bench/') && toService && !isPublic && !BENCH_COMPONENTS[file]?.includes(to)) {
        out.push(`${file}: ${spec} (bench imports a service's public entry only)`);
      }
    }
  }
  return out;
}

function repoWorkspaces(): Map<string, string> {
  const dirs = execFileSync('git', ['ls-files', 'shared/package.json', 'services/*/package.json', 'packages/*/package.json'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean)
    .map(dirname);
  return new Map(dirs.map((d) => [(JSON.parse(readFileSync(join(ROOT, d, 'package.json'), 'utf8')) as { name: string }).name, d]));
}

t.test('the repository keeps the layout rules', async (t) => {
  // Tracked and new files alike, so a violation fails before it is committed.
  const files = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', 'services', 'shared', 'bench', 'packages'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  )
    .split('\0')
    .filter((f) => /\.(ts|tsx|mts|mjs|js)$/.test(f));
  t.ok(files.length > 100, 'the sources were found');
  const sources = new Map(files.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));
  t.same(violations(sources, repoWorkspaces()), []);
  // Each listed micro-benchmark import still exists: the list shrinks when the bench does.
  for (const [file, allowed] of Object.entries(BENCH_COMPONENTS)) {
    const imported = specifiers(sources.get(file) ?? '').map((s) => normalize(join(dirname(file), s)));
    for (const a of allowed) t.ok(imported.includes(a), `${file} imports ${relative('.', a)}`);
  }
});

t.test('violations are found', async (t) => {
  const ws = new Map([
    ['@switchyard/shared', 'shared'],
    ['@switchyard/gateway', 'services/gateway'],
    ['@switchyard/sender', 'services/sender'],
  ]);
  const check = (file: string, line: string) => violations(new Map([[file, line]]), ws);
  t.match(check('services/gateway/src/a.ts', "import { x } from '../../sender/src/egress.ts';"), [/no other service/], 'relative path');
  t.match(
    check('services/gateway/src/a.ts', "import type { X } from '@switchyard/sender/src/sender.ts';"),
    [/no other service/],
    'package',
  );
  t.match(
    check('services/gateway/src/a.ts', "const m = await import('@switchyard/sender/src/service.ts');"),
    [/no other service/],
    'not even an entry',
  );
  t.match(check('services/router/test/a.ts', "import { x } from '../../gateway/test/helpers.ts';"), [/no other service/], 'tests too');
  t.match(check('shared/src/a.ts', "export { x } from '../../services/gateway/src/app.ts';"), [/shared imports no service/]);
  t.same(
    check('shared/test/a.test.ts', "import { x } from '../../services/embedded/src/setup.ts';"),
    [],
    'a shared test may drive a service',
  );
  t.match(check('bench/x.ts', "import { x } from '../services/gateway/src/queries/sql.ts';"), [/public entry only/]);
  t.match(
    check('bench/senders.ts', "import { x } from '../services/sender/src/retry-scheduler.ts';"),
    [/public entry only/],
    'only the listed modules',
  );

  t.same(
    check('services/embedded/src/main.ts', "import { start } from '@switchyard/gateway/src/service.ts';"),
    [],
    'embedded composes entries',
  );
  t.match(check('services/embedded/src/main.ts', "import { x } from '@switchyard/gateway/src/auth.ts';"), [/no other service/]);
  t.same(check('bench/x.ts', "import { build } from '../services/gateway/src/app.ts';"), []);
  t.same(check('bench/senders.ts', "import { createClientCache } from '../services/sender/src/clients.ts';"), []);
  t.same(check('services/gateway/src/a.ts', "import { x } from './b.ts';\nimport { y } from '@switchyard/shared/db/paging.ts';"), []);
  t.match(check('packages/client/src/a.ts', "import { x } from '@switchyard/shared/model/index.ts';"), [/sources import no workspace/]);
  t.match(check('packages/client/src/a.ts', "import { x } from '../../../shared/src/ids.ts';"), [/sources import no workspace/]);
  t.same(check('packages/client/src/a.ts', "import { x } from './paging.ts';\nimport createClient from 'openapi-fetch';"), []);
});
