// The topic table of docs/architecture.md against the catalogue (shared/src/bus/topics.ts): every
// topic a service creates has its row, with its key and its record schema, and every schema file
// under shared/schemas/ is a topic's (or referenced by one). What the pipeline really writes is
// checked against those schemas in test/e2e/pipeline.test.ts.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { allTopics, RETRY_TIERS_SECONDS } from '@switchyard/shared/bus/topics.ts';
import { ROOT } from '@switchyard/shared/testing/index.ts';

const KEYS: Record<string, string> = { tenant_id: 'tenant id', destination_id: 'destination id', 'as received': 'as received' };

/** The catalogue name as the table spells it: one row for all deliveries.<type>, one for the tiers. */
const rowName = (name: string) => name.replace(/^deliveries\..+$/, 'deliveries.<type>').replace(/^retry\.\d+s$/, 'retry.<n>s');

t.test('docs/architecture.md lists every topic with its key and schema', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const rows = new Map<string, string[]>();
  for (const line of doc.split('\n')) {
    const m = /^\| `([^`]+)`[^|]*\|(.*)\|\s*$/.exec(line);
    if (m && /\| (tenant id|destination id|as received) \|/.test(line))
      rows.set(
        m[1] as string,
        (m[2] as string).split('|').map((c) => c.trim()),
      );
  }
  const catalogue = new Map(allTopics().map((d) => [rowName(d.name), d]));
  t.same([...rows.keys()].sort(), [...catalogue.keys()].sort(), 'one row per topic (deliveries and retry tiers as one row each)');
  for (const [name, def] of catalogue) {
    const [key, , schema] = rows.get(name) ?? [];
    t.equal(key, KEYS[def.key], `${name}: key`);
    t.equal(/`([^`]+\.schema\.json)`/.exec(schema ?? '')?.[1], def.schema, `${name}: schema`);
  }
  t.match(doc, `\`retry.<n>s\` (${RETRY_TIERS_SECONDS.join(', ')})`, 'the retry tiers as the catalogue has them');
});

t.test('every schema file is a topic record or referenced by one', async (t) => {
  const files = readdirSync(join(ROOT, 'shared/schemas')).filter((f) => f.endsWith('.schema.json'));
  const used = new Set(allTopics().flatMap((d) => (d.schema ? [d.schema] : [])));
  for (const f of files) {
    const text = readFileSync(join(ROOT, 'shared/schemas', f), 'utf8');
    for (const m of text.matchAll(/"\$ref":\s*"([^"#]+\.schema\.json)/g)) used.add(m[1] as string);
  }
  t.same(files.sort(), [...used].sort(), 'no schema file unused, none missing');
});
