import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { GENERATED_SECRETS, loadSecretsFile } from '../src/secrets-file.ts';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'sy-secrets-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('generated once, in a private file, then read back unchanged', async (t) => {
  const file = join(tempDir(t), 'sub', 'secrets.env');
  const first = loadSecretsFile(file, { header: ['# a comment'] });
  t.same(first.generated, [...GENERATED_SECRETS]);
  t.equal(statSync(file).mode & 0o777, 0o600, 'mode 0600, in a directory made for it');
  t.match(readFileSync(file, 'utf8'), /^# a comment\nAPI_KEY=[\w-]{32}\n/);
  const second = loadSecretsFile(file);
  t.same(second, { values: first.values, generated: [] }, 'nothing generated, nothing rewritten');
});

t.test('only what is missing and not supplied is generated; other entries are kept', async (t) => {
  const file = join(tempDir(t), 'secrets.env');
  writeFileSync(file, '# note\nAPI_KEY = mine \nOTHER=x\n');
  const supplied = (name: string) => name === 'API_JWT_SECRET';
  const { values, generated } = loadSecretsFile(file, { supplied });
  t.same(generated, ['AES_ENCRYPTION_SECRET']);
  t.same(Object.keys(values), ['API_KEY', 'OTHER', 'AES_ENCRYPTION_SECRET']);
  t.equal(values.API_KEY, 'mine', 'values are trimmed');
  t.same(loadSecretsFile(file, { supplied }), { values, generated: [] }, 'written back');
});
