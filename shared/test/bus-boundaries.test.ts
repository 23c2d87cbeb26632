// The bus's boundaries, checked over the imports of every TypeScript file of shared/ and services/:
//   - shared/src/bus/ (the port, the topic catalogue, record values, the consumer code every adapter
//     shares) imports neither adapter, shared/src/kafka/ nor shared/src/embedded/;
//   - a service (its sources and its tests) imports neither adapter: it gets its bus from
//     shared/src/runtime.ts, the one place that chooses an implementation;
//   - the rest of shared/src imports an adapter only where ALLOWED says why.
// The adapters' own tests (shared/test/, test/) and the benchmark drive an adapter directly and are
// not checked. Imports are read with TypeScript's own pre-processor: static, type-only, side-effect,
// re-exports and dynamic import() alike.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { ROOT } from '../src/testing/index.ts';

const ADAPTERS = ['shared/src/kafka/', 'shared/src/embedded/'];

/** Imports of an adapter that are meant, as `file -> target` (a target ending in / is a folder), each with why. */
const ALLOWED: Record<string, string> = {
  'shared/src/runtime.ts -> shared/src/kafka/': 'the composition root: it chooses the Kafka bus or the embedded log',
  'shared/src/runtime.ts -> shared/src/embedded/': 'the composition root: it chooses the Kafka bus or the embedded log',
  'shared/src/db/rotate-embedded.ts -> shared/src/embedded/':
    're-encrypts an embedded data directory offline: the embedded log is what it rewrites',
  'services/sender/src/kafka/sender.ts -> shared/src/kafka/kafkajs/idle-poll.ts':
    "the Kafka destination type's own kafkajs client takes the same fix to kafkajs (embedded mode never loads the bus's)",
  'services/gateway/test/helpers.ts -> shared/src/kafka/index.ts':
    "the gateway's route tests build the app (app.ts) on a real Kafka producer, without a whole runtime",
  'services/gateway/test/helpers.ts -> shared/src/embedded/bus.ts':
    "the gateway's route tests build the app on an embedded log too, whose lag the admission bound reads as it reads Kafka's",
};

/** The repository path an import of `spec` from `file` lands on; undefined for a package outside the repository. */
export function targetOf(file: string, spec: string): string | undefined {
  if (spec.startsWith('.')) return normalize(join(dirname(file), spec));
  // shared exports ./* from ./src/* (and ./schemas/*).
  const m = /^@switchyard\/shared\/(.*)$/.exec(spec);
  return m ? `shared/src/${m[1]}` : undefined;
}

/** Every import of an adapter that breaks the rules, as "file -> target", for sources given as path -> text. */
export function violations(sources: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [file, source] of sources) {
    const checked = file.startsWith('shared/src/') || /^services\/[^/]+\//.test(file);
    if (!checked || ADAPTERS.some((a) => file.startsWith(a))) continue;
    for (const { fileName } of ts.preProcessFile(source, true, true).importedFiles) {
      const to = targetOf(file, fileName);
      const adapter = to && ADAPTERS.find((a) => to.startsWith(a));
      if (!to || !adapter) continue;
      const allowed = !file.startsWith('shared/src/bus/') && (ALLOWED[`${file} -> ${to}`] || ALLOWED[`${file} -> ${adapter}`]);
      if (!allowed) out.push(`${file} -> ${to}`);
    }
  }
  return out;
}

t.test('no import of an adapter into the bus port or a service', async (t) => {
  // Tracked and new files alike, so a violation fails before it is committed.
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', 'shared', 'services'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((f) => /\.(ts|mts|tsx)$/.test(f) && !f.endsWith('.d.ts'));
  t.ok(files.filter((f) => f.startsWith('shared/src/bus/')).length >= 6, 'the bus port was found');
  t.ok(files.filter((f) => /^services\/[^/]+\/src\//.test(f)).length > 50, 'the services were found');
  const sources = new Map(files.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));
  t.same(violations(sources), []);
  // Each allowed import still exists: the list shrinks when the code does.
  for (const entry of Object.keys(ALLOWED)) {
    const [file, to] = entry.split(' -> ') as [string, string];
    const imported = ts.preProcessFile(sources.get(file) ?? '', true, true).importedFiles.map((i) => targetOf(file, i.fileName));
    t.ok(
      imported.some((i) => i !== undefined && (to.endsWith('/') ? i.startsWith(to) : i === to)),
      `${entry} is still imported`,
    );
  }
});

t.test('violations are found', async (t) => {
  const check = (file: string, line: string) => violations(new Map([[file, line]]));
  t.same(check('shared/src/bus/index.ts', "import type { X } from '../kafka/client.ts';"), [
    'shared/src/bus/index.ts -> shared/src/kafka/client.ts',
  ]);
  t.same(check('shared/src/bus/consume.ts', "export { x } from '../embedded/codec.ts';"), [
    'shared/src/bus/consume.ts -> shared/src/embedded/codec.ts',
  ]);
  t.same(
    check('shared/src/bus/topics.ts', "import '../kafka/kafkajs/idle-poll.ts';"),
    ['shared/src/bus/topics.ts -> shared/src/kafka/kafkajs/idle-poll.ts'],
    'an allowed target is still refused to the port',
  );
  t.same(
    check('services/router/src/service.ts', "const { createKafkaBus } = await import('@switchyard/shared/kafka/index.ts');"),
    ['services/router/src/service.ts -> shared/src/kafka/index.ts'],
    'dynamic import from a service',
  );
  t.same(
    check('services/attempts/test/a.test.ts', "import { createEmbeddedBus } from '@switchyard/shared/embedded/bus.ts';"),
    ['services/attempts/test/a.test.ts -> shared/src/embedded/bus.ts'],
    "a service's tests too",
  );
  t.same(
    check('services/sender/src/kafka/sender.ts', "import { createKafkaBus } from '@switchyard/shared/kafka/index.ts';"),
    ['services/sender/src/kafka/sender.ts -> shared/src/kafka/index.ts'],
    'an allowed file imports only what is allowed',
  );
  t.same(check('shared/src/metrics.ts', "import { x } from './kafka/producer.ts';"), [
    'shared/src/metrics.ts -> shared/src/kafka/producer.ts',
  ]);
  t.same(check('shared/src/runtime.ts', "const m = await import('./kafka/index.ts');"), [], 'runtime.ts chooses');
  t.same(
    check('shared/src/kafka/consumer.ts', "import { x } from '../embedded/codec.ts';"),
    [],
    'the adapters themselves are not checked here',
  );
  t.same(
    check('services/sender/src/service.ts', "import { x } from './kafka/sender.ts';"),
    [],
    "the sender's Kafka destination type is not the adapter",
  );
  t.same(check('services/gateway/src/app.ts', "import type { Bus } from '@switchyard/shared/bus/index.ts';"), []);
});
