import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createCipher } from '../src/crypto.ts';
import { createDb, migrateLatest } from '../src/db/index.ts';
import { reencryptAll } from '../src/db/reencrypt.ts';
import { checkStoredKey, DestinationStore } from '../src/db/stores/destinations.ts';
import { createRuntime } from '../src/runtime.ts';
import { onBothDatabases } from '../src/testing/databases.ts';
import { createTestDatabase, ROOT, testEnv } from '../src/testing/index.ts';
import { ConfigError, loadServiceConfig } from '../src/config/index.ts';

t.test('cipher round-trips, detects tampering and unknown keys', async (t) => {
  const c = createCipher('key-a');
  const sealed = c.encrypt('{"secret":"s3cr3t"}');
  t.notMatch(sealed, 's3cr3t');
  t.equal(c.decrypt(sealed), '{"secret":"s3cr3t"}');
  t.not(c.encrypt('x'), c.encrypt('x'), 'a fresh IV every time');
  // One bit of the ciphertext flipped (a changed base64 character may differ only in padding bits).
  const [version, keyId, payload] = sealed.split('.') as [string, string, string];
  const bytes = Buffer.from(payload, 'base64url');
  bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 1;
  const tampered = `${version}.${keyId}.${bytes.toString('base64url')}`;
  t.throws(() => c.decrypt(tampered), 'GCM tag check fails on tampering');
  t.throws(() => createCipher('key-b').decrypt(sealed), 'another key cannot read it');
});

t.test('key rotation: both keys readable during rotation, then every row on the new key', async (t) => {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 2 });
  t.teardown(() => db.destroy());
  await migrateLatest(db);
  await db('tenants').insert({ id: 'acme' });
  const oldStore = new DestinationStore(db, createCipher('old-key'));
  for (let i = 0; i < 7; i++) {
    await oldStore.create({
      id: `d${i}`,
      tenant_id: 'acme',
      type: 's3',
      topics: ['*'],
      config: { bucket: 'b', region: 'r' },
      credentials: { key: 'k', secret: `secret-${i}` },
      delivery_metadata: i % 2 ? { env: 'prod' } : null,
      metadata: null,
      filter: null,
    });
  }
  const rotating = createCipher('new-key', ['old-key']);
  const during = new DestinationStore(db, rotating);
  t.equal((await during.get('acme', 'd3'))?.credentials.secret, 'secret-3', 'old rows readable during rotation');

  const result = await reencryptAll(db, rotating, 3);
  t.same(result, { scanned: 7, rewritten: 7 });
  t.same(await reencryptAll(db, rotating, 3), { scanned: 7, rewritten: 0 }, 'running again changes nothing');

  const after = new DestinationStore(db, createCipher('new-key'));
  const all = await after.list('acme');
  t.same(
    all.map((d) => d.credentials.secret).sort(),
    [0, 1, 2, 3, 4, 5, 6].map((i) => `secret-${i}`),
  );
  t.same(all.find((d) => d.id === 'd1')?.delivery_metadata, { env: 'prod' });
  await t.rejects(new DestinationStore(db, createCipher('old-key')).get('acme', 'd1'), 'the old key alone no longer reads them');
});

t.test('a start with keys that open none of the stored secrets is refused, naming the setting', async (t) => {
  const url = await createTestDatabase(t);
  const db = createDb({ url, poolMax: 2 });
  t.teardown(() => db.destroy());
  await migrateLatest(db);
  const [oldKey, newKey] = ['old-key-0123456789abcdef0123456789', 'new-key-0123456789abcdef0123456789'];
  await t.resolves(checkStoredKey(db, createCipher(newKey)), 'nothing stored: any key');
  await db('tenants').insert({ id: 'acme' });
  await new DestinationStore(db, createCipher(oldKey)).create({
    id: 'd1',
    tenant_id: 'acme',
    type: 'webhook',
    topics: ['*'],
    config: { url: 'https://example.com/hook' },
    credentials: { secret: 'whsec_x' },
    delivery_metadata: null,
    metadata: null,
    filter: null,
  });
  await t.resolves(checkStoredKey(db, createCipher(oldKey)), 'the key that wrote them');
  await t.resolves(checkStoredKey(db, createCipher(newKey, [oldKey])), 'a rotation: it as the previous key');
  const refused = /^invalid configuration: AES_ENCRYPTION_SECRET: the stored destination secrets were written with another key/;
  const err = await checkStoredKey(db, createCipher(newKey)).catch((e: unknown) => e);
  t.ok(err instanceof ConfigError, 'a configuration error: one line and exit code 2 at start');
  t.match((err as Error).message, refused);
  // Every service's start: refused before Kafka is asked for (nothing listens at that address).
  const config = loadServiceConfig('gateway', {
    ...testEnv(),
    DATABASE_URL: url,
    KAFKA_BROKERS: '127.0.0.1:1',
    AES_ENCRYPTION_SECRET: newKey,
  });
  await t.rejects(createRuntime('gateway', config), { code: 'CONFIG_INVALID', message: refused });
});

onBothDatabases(
  t,
  'a start refused while some stored secrets open with neither key, naming how many and one of them',
  async (t: Test, db) => {
    const [a, b, c] = ['key-a-0123456789abcdef0123456789ab', 'key-b-0123456789abcdef0123456789ab', 'key-c-0123456789abcdef0123456789ab'];
    await db('tenants').insert([{ id: 'acme' }, { id: 'beta' }]);
    const make = (tenant: string, id: string, key: string, secrets: 'credentials' | 'delivery_metadata') =>
      new DestinationStore(db, createCipher(key)).create({
        id,
        tenant_id: tenant,
        type: 'webhook',
        topics: ['*'],
        config: { url: 'https://example.com/hook' },
        credentials: secrets === 'credentials' ? { secret: `whsec_${id}` } : {},
        delivery_metadata: secrets === 'delivery_metadata' ? { team: id } : null,
        metadata: null,
        filter: null,
      });
    // A rotation whose command never ran, and the old key then dropped: most rows under b, some under a.
    await make('acme', 'd1', b, 'credentials');
    await make('beta', 'd2', a, 'delivery_metadata');
    await make('acme', 'd3', a, 'credentials');
    await make('beta', 'd4', b, 'delivery_metadata');
    await t.resolves(checkStoredKey(db, createCipher(b, [a])), 'both keys: every secret opens');
    await t.resolves(checkStoredKey(db, createCipher(a, [c, b])), 'either order, with an unused key beside them');

    const err = await checkStoredKey(db, createCipher(b)).catch((e: unknown) => e);
    t.ok(err instanceof ConfigError, 'a configuration error: one line and exit code 2 at start');
    t.equal(
      (err as Error).message,
      "invalid configuration: AES_ENCRYPTION_SECRET: 2 destinations' secrets were written with a key that is neither it nor " +
        'AES_ENCRYPTION_SECRET_PREVIOUS (acme/d3 first); set that key as AES_ENCRYPTION_SECRET_PREVIOUS and run ' +
        'npm run rotate-encryption-key (docs/operations.md, "Rotating the encryption key")',
      'names the count of destinations the key does not open (credentials or delivery_metadata) and the first',
    );
    t.notMatch((err as Error).message, /whsec_|team/, 'no secret in the message');
    const onlyA = await checkStoredKey(db, createCipher(a)).catch((e: unknown) => e);
    t.match(
      (onlyA as Error).message,
      /AES_ENCRYPTION_SECRET: 2 destinations' secrets .* \(acme\/d1 first\)/,
      'the other half, from the other side',
    );
    const neither = await checkStoredKey(db, createCipher(c)).catch((e: unknown) => e);
    t.match((neither as Error).message, /the stored destination secrets were written with another key/, 'a key that opens none: as before');
  },
);

t.test('npm run rotate-encryption-key on Postgres: only DATABASE_URL and the keys; all rows or none', async (t) => {
  const url = await createTestDatabase(t);
  const db = createDb({ url, poolMax: 2 });
  t.teardown(() => db.destroy());
  await migrateLatest(db);
  await db('tenants').insert({ id: 'acme' });
  const oldKey = 'old-key-0123456789abcdef0123456789';
  const newKey = 'new-key-0123456789abcdef0123456789';
  const make = (id: string, key: string) =>
    new DestinationStore(db, createCipher(key)).create({
      id,
      tenant_id: 'acme',
      type: 's3',
      topics: ['*'],
      config: { bucket: 'b', region: 'r' },
      credentials: { key: 'k', secret: `secret-${id}` },
      delivery_metadata: null,
      metadata: null,
      filter: null,
    });
  await make('d1', oldKey);
  await make('d2', oldKey);
  await make('d9', 'a-key-nobody-has-0123456789abcdef'); // last in the rewrite order
  const rows = () => db('destinations').select('id', 'credentials').orderBy('id');
  const before = await rows();
  // No API_KEY, no API_JWT_SECRET: the command does not use them.
  const run = () =>
    spawnSync(process.execPath, [join(ROOT, 'shared/src/db/reencrypt-cli.ts')], {
      env: { PATH: process.env.PATH, DATABASE_URL: url, AES_ENCRYPTION_SECRET: newKey, AES_ENCRYPTION_SECRET_PREVIOUS: oldKey },
      encoding: 'utf8',
    });

  const failed = run();
  t.equal(failed.status, 1, 'a row no key reads fails it');
  t.match(failed.stderr, /^rotate-encryption-key: .*; nothing was changed\n$/);
  t.match(
    failed.stderr,
    /destination \w+\/d9 was written with a key that is neither .* set the key that wrote it as AES_ENCRYPTION_SECRET_PREVIOUS/,
  );
  t.same(await rows(), before, 'every row as it was, the ones before the failure included');

  await db('destinations').where({ id: 'd9' }).del();
  const ok = run();
  t.equal(ok.status, 0, ok.stderr);
  t.match(ok.stdout, /re-encrypted 2 of 2 destinations/);
  const fresh = new DestinationStore(db, createCipher(newKey));
  t.same((await fresh.list('acme')).map((d) => d.credentials.secret).sort(), ['secret-d1', 'secret-d2']);
});
