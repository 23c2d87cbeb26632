// One file per destination type in shared (shared/src/destinations/types/<type>.ts), as the sender
// has one folder per type (services/sender/src/<type>/): a reader finds a type's declaration and
// its delivery by the same name, and the registry holds each under its own name.
import { existsSync, readdirSync } from 'node:fs';
import t from 'tap';
import { REGISTRY } from '../src/destinations/registry.ts';
import { DESTINATION_TYPES } from '../src/model/index.ts';

const types = new URL('../src/destinations/types/', import.meta.url);
const sender = new URL('../../services/sender/src/', import.meta.url);

t.test('every type has its own file in shared and its own folder in the sender', async (t) => {
  t.same(Object.keys(REGISTRY).sort(), [...DESTINATION_TYPES].sort(), 'the registry holds every type');
  for (const type of DESTINATION_TYPES) {
    t.equal(REGISTRY[type].type, type, `${type}: registered under its own name`);
    const module = (await import(new URL(`${type}.ts`, types).href)) as Record<string, unknown>;
    t.equal(module[type], REGISTRY[type], `${type}: declared in types/${type}.ts`);
    t.ok(existsSync(new URL(`${type}/`, sender)), `${type}: services/sender/src/${type}/`);
  }
  const files = readdirSync(types).filter((f) => f.endsWith('.ts'));
  t.same(files.sort(), [...DESTINATION_TYPES.map((type) => `${type}.ts`), 'def.ts'].sort(), 'no other file: def.ts is what they share');
});
