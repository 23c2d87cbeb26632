// The guard of the changes to kafkajs's internals (shared/src/kafka/kafkajs/): each is written for one
// kafkajs version and refuses to load on another. This test fails first when kafkajs is upgraded,
// and each patch is checked to call the guard before it touches kafkajs.
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { assertPatchedKafkajs, installedKafkajs, PATCHED_KAFKAJS } from '../src/kafka/kafkajs/version.ts';

const DIR = new URL('../src/kafka/kafkajs/', import.meta.url);

t.test('the installed kafkajs is the one the patches were written for', async (t) => {
  t.equal(installedKafkajs(), PATCHED_KAFKAJS);
  const pinned = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> })
    .dependencies.kafkajs;
  t.equal(pinned, PATCHED_KAFKAJS, 'shared/package.json pins exactly that version');
  t.doesNotThrow(() => assertPatchedKafkajs('x.ts'));
});

t.test('another version fails loudly, naming the patch', async (t) => {
  t.throws(
    () => assertPatchedKafkajs('produce.ts', '2.2.5'),
    /kafkajs 2\.2\.5 is installed but shared\/src\/kafka\/kafkajs\/produce\.ts patches kafkajs 2\.2\.4/,
  );
  t.throws(() => assertPatchedKafkajs('crc32c.ts', '3.0.0'), /crc32c\.ts/);
});

t.test('every patch calls the guard at load, before it requires kafkajs', async (t) => {
  const patches = readdirSync(DIR).filter((f) => f.endsWith('.ts') && f !== 'version.ts' && f !== 'index.ts');
  t.same(patches.sort(), ['acked.ts', 'crc32c.ts', 'fetch-wait.ts', 'idle-poll.ts', 'produce-writer.ts', 'produce.ts']);
  const sources = new Map(readdirSync(DIR).map((f) => [f, readFileSync(new URL(f, DIR), 'utf8')]));
  for (const f of patches) {
    const source = sources.get(f) as string;
    const guard = source.indexOf(`\nassertPatchedKafkajs('${f}');`);
    t.ok(guard > 0, `${f} calls assertPatchedKafkajs('${f}') at top level`);
    const firstRequire = source.search(/\brequire(\.resolve)?\(/);
    t.ok(firstRequire < 0 || firstRequire > guard, `${f} checks the version before it requires kafkajs`);
    // Loaded with the bus: by kafkajs/index.ts, or by the patch it serves (produce-writer.ts by produce.ts).
    const loaders = [...sources].filter(([g, s]) => g !== f && (s.includes(`import './${f}';`) || s.includes(`from './${f}';`)));
    t.ok(loaders.length > 0, `${f} is loaded by ${loaders.map(([g]) => g).join(', ') || 'nothing'}`);
  }
});
