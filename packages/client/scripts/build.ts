// Builds the publishable package: JavaScript (ES2022, ESM) and .d.ts files of the client, with a
// package.json of their own, in a directory that `npm pack` / `npm publish` take as it is:
//   npm run build -w packages/client                 writes packages/client/dist
//   node packages/client/scripts/build.ts --out DIR  writes DIR
// The workspace itself stays TypeScript source (the repository's services, tests and the portal
// import src/ directly); only the built directory is a package anyone else installs. The build runs
// in the repository's Node (24, which runs TypeScript as is; infra/node.sh); the package it writes
// runs in Node 20+ and type-checks with `tsc` under `module: nodenext` (packages/client/test/pack.test.ts).
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Declaration files keep the sources' `./x.ts` specifiers (tsc rewrites them in JavaScript only). */
const TS_SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*)(['"])(\.{1,2}\/[^'"\n]+)\.ts\2/g;

function* files(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* files(p);
    else yield p;
  }
}

export function buildClient(out: string): string {
  rmSync(out, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.build.json'), '--outDir', out], { stdio: 'inherit' });
  for (const f of files(out))
    if (f.endsWith('.d.ts'))
      writeFileSync(
        f,
        readFileSync(f, 'utf8').replace(TS_SPECIFIER, (_m, lead, q, spec) => `${lead}${q}${spec}.js${q}`),
      );
  const source = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
  const entry = (name: string) => ({ types: `./${name}.d.ts`, default: `./${name}.js` });
  const pkg = {
    name: source.name,
    version: source.version,
    description: source.description,
    license: 'Apache-2.0',
    type: 'module',
    engines: { node: '>=20' },
    sideEffects: false,
    main: './index.js',
    types: './index.d.ts',
    exports: { '.': entry('index'), './client': entry('client'), './package.json': './package.json' },
    dependencies: source.dependencies,
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  cpSync(join(here, 'README.md'), join(out, 'README.md'));
  return out;
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: join(here, 'dist') } } });
  console.log(`built ${buildClient(resolve(values.out as string))}`);
}
