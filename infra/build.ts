// npm run build: the services as plain JavaScript in a tree of their own (default dist/), for
// production images and the benchmark. Development and tests run the TypeScript directly; this is
// the same transform Node applies when it loads a .ts file (module.stripTypeScriptTypes: types
// become whitespace, so lines and columns stay), done once ahead of time. What it saves: the type
// stripper is WebAssembly whose memory a process never gives back, about 44 MB of RSS per service.
//
//   node infra/build.ts [--out DIR]
//
// DIR gets shared/ and services/*/ (package.json, src/ as .js, shared/schemas) and a node_modules/
// whose @switchyard/* point at DIR's workspaces and everything else at the repository's installed
// packages, so `node DIR/services/<name>/src/main.js` runs from any working directory. The links
// are relative, so DIR runs only where it was built relative to the repository's node_modules (the
// Dockerfile builds it inside the image, after npm ci); it is not a tree to copy elsewhere on its
// own. Each workspace's own node_modules (versions npm did not hoist) is linked too.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { out: { type: 'string', default: join(root, 'dist') } } });
const out = resolve(values.out as string);

// Every import of a local module names its .ts file (import/export ... from, import(), import '...').
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])([^'"\n]+)\.ts\2/g;

/** Strips the types of one module and points its imports at the .js files. Exported for the test. */
export function toJavaScript(source: string): string {
  const js = stripTypeScriptTypes(source, { mode: 'strip' });
  return js.replace(SPECIFIER, (_m, lead: string, q: string, spec: string) => `${lead}${q}${spec}.js${q}`);
}

function* tsFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* tsFiles(p);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) yield p;
  }
}

/** A relative symlink, so the tree can be moved or copied with its links (a container image). */
const link = (target: string, at: string) => symlinkSync(relative(dirname(at), target), at, 'dir');

function build(): void {
  const workspaces = ['shared', ...readdirSync(join(root, 'services')).map((s) => `services/${s}`)].filter((w) =>
    existsSync(join(root, w, 'package.json')),
  );
  rmSync(out, { recursive: true, force: true });
  let files = 0;
  for (const ws of workspaces) {
    const from = join(root, ws);
    const to = join(out, ws);
    mkdirSync(to, { recursive: true });
    cpSync(join(from, 'package.json'), join(to, 'package.json'));
    if (existsSync(join(from, 'schemas'))) cpSync(join(from, 'schemas'), join(to, 'schemas'), { recursive: true });
    // The portal is a browser app: the tree carries its built assets (infra/portal.sh), which the
    // gateway serves, not its sources.
    if (ws === 'services/portal') {
      if (existsSync(join(from, 'dist'))) cpSync(join(from, 'dist'), join(to, 'dist'), { recursive: true });
      continue;
    }
    if (existsSync(join(from, 'node_modules'))) link(join(from, 'node_modules'), join(to, 'node_modules'));
    for (const file of tsFiles(join(from, 'src'))) {
      const target = join(to, relative(from, file)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, toJavaScript(readFileSync(file, 'utf8')));
      files++;
    }
  }
  // Imports of the workspaces from outside them keep their package form: '@switchyard/shared/x.js'.
  const modules = join(out, 'node_modules');
  mkdirSync(join(modules, '@switchyard'), { recursive: true });
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (name === '@switchyard' || name === '.bin') continue;
    link(join(root, 'node_modules', name), join(modules, name));
  }
  for (const ws of workspaces) {
    const { name } = JSON.parse(readFileSync(join(root, ws, 'package.json'), 'utf8')) as { name: string };
    link(join(out, ws), join(modules, name));
  }
  writeFileSync(join(out, 'package.json'), `${JSON.stringify({ private: true, type: 'module' }, null, 2)}\n`);
  console.log(`build: ${files} modules in ${relative(process.cwd(), out) || '.'}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) build();
