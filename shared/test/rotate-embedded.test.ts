// Key rotation of an embedded deployment: `npm run rotate-encryption-key` generates the new key,
// re-encrypts every destination secret in the embedded database under it and keeps the old key in the
// file until `--retire` drops it, at once: deliveries waiting in the log never need it (a sender opens
// the destination as stored now). Rotating again before retiring makes no new key and says so.
// It needs only the settings it uses, and a failure changes neither the secrets file nor the database.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createCipher } from '../src/crypto.ts';
import { openEmbeddedDb } from '../src/db/embedded.ts';
import { rotateEmbedded } from '../src/db/rotate-embedded.ts';
import { DestinationStore } from '../src/db/stores/destinations.ts';
import { createEmbeddedBus } from '../src/embedded/bus.ts';
import { lockDirectory } from '../src/embedded/lock.ts';
import { TOPIC } from '../src/bus/topics.ts';
import { createLogger } from '../src/log.ts';
import { loadSecretsFile, readEnvFile } from '../src/secrets-file.ts';
import { copyMigratedEmbeddedDb } from '../src/testing/embedded-template.ts';
import { ROOT } from '../src/testing/index.ts';

const log = createLogger('test', 'silent');

t.test('embedded key rotation re-encrypts under a new key and retires the old one', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sy-rotate-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const file = join(dataDir, 'secrets.env');
  const oldKey = loadSecretsFile(file).values.AES_ENCRYPTION_SECRET as string;

  // A deployment with two destinations whose secrets are sealed with the generated key.
  await copyMigratedEmbeddedDb(join(dataDir, 'pg'));
  const seed = await openEmbeddedDb(join(dataDir, 'pg'));
  await seed.db('tenants').insert({ id: 'acme' });
  const seal = new DestinationStore(seed.db, createCipher(oldKey));
  for (const i of [1, 2]) {
    await seal.create({
      id: `d${i}`,
      tenant_id: 'acme',
      type: 'webhook',
      topics: ['*'],
      config: { url: 'https://example.com/hook' },
      credentials: { secret: `whsec_${i}` },
      delivery_metadata: { env: 'prod' },
      metadata: null,
      filter: null,
    });
  }
  await seed.close();

  // A delivery routed before the rotation, still waiting in the log for its sender.
  const bus = await createEmbeddedBus({ dir: join(dataDir, 'log'), topicPrefix: 'switchyard.', partitions: 12, log });
  await bus.ensureTopics();
  await (await bus.producer()).send(TOPIC.deliveries.webhook, [{ key: 'd1', value: { waiting: true } }]);
  await bus.close();

  t.test('refused while the data directory is in use', async (t) => {
    const held = lockDirectory(dataDir);
    t.teardown(() => held.release());
    await t.rejects(rotateEmbedded({ DATA_DIR: dataDir }), /already open|in use/);
    t.equal(readEnvFile(file).AES_ENCRYPTION_SECRET, oldKey, 'nothing changed');
  });

  t.test('rotate (the npm script, embedded mode)', async (t) => {
    const r = spawnSync(process.execPath, [join(ROOT, 'shared/src/db/reencrypt-cli.ts')], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, DATABASE_URL: '', KAFKA_BROKERS: '' },
      encoding: 'utf8',
    });
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /re-encrypted 2 of 2 destinations under the current key/);
    t.match(r.stdout, /--retire/);
    const keys = readEnvFile(file);
    t.not(keys.AES_ENCRYPTION_SECRET, oldKey, 'a new key');
    t.equal(keys.AES_ENCRYPTION_SECRET_PREVIOUS, oldKey, 'the old key kept readable');
    t.equal(keys.API_KEY, loadSecretsFile(file).values.API_KEY, 'the other secrets kept');

    const db = await openEmbeddedDb(join(dataDir, 'pg'));
    t.teardown(() => db.close());
    const fresh = new DestinationStore(db.db, createCipher(keys.AES_ENCRYPTION_SECRET as string));
    t.same((await fresh.list('acme')).map((d) => d.credentials.secret).sort(), ['whsec_1', 'whsec_2'], 'the new key alone reads every row');
    await t.rejects(new DestinationStore(db.db, createCipher(oldKey)).get('acme', 'd1'), 'the old key alone reads none');
    const rows = (await db.db('destinations').select('credentials')) as Array<{ credentials: string }>;
    const newId = createCipher(keys.AES_ENCRYPTION_SECRET as string)
      .encrypt('x')
      .split('.')[1];
    t.ok(
      rows.every((r) => r.credentials.split('.')[1] === newId),
      'every stored ciphertext names the new key',
    );
  });

  t.test('embedded mode reads both keys meanwhile', async (t) => {
    const { prepare } = await import('../../services/embedded/src/setup.ts');
    const env = prepare({ DATA_DIR: dataDir }).env;
    t.equal(env.AES_ENCRYPTION_SECRET_PREVIOUS, oldKey);
    t.not(env.AES_ENCRYPTION_SECRET, oldKey);
  });

  t.test('rotating again before retiring finishes the rotation, makes no new key, and says so', async (t) => {
    const before = readEnvFile(file);
    const r = spawnSync(process.execPath, [join(ROOT, 'shared/src/db/reencrypt-cli.ts')], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, DATABASE_URL: '', KAFKA_BROKERS: '' },
      encoding: 'utf8',
    });
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /no new key: an earlier rotation was not retired yet/);
    t.notMatch(r.stdout, /the new key is in/, 'not told of a new key');
    t.same(readEnvFile(file), before, 'the secrets file is unchanged');
  });

  t.test('retire drops the old key at once, a delivery routed before still waiting in the log', async (t) => {
    const r = await rotateEmbedded({ DATA_DIR: dataDir }, { retire: true });
    t.match(r, { action: 'retired', rewritten: 0, scanned: 2, keys: 'secrets-file' });
    const keys = readEnvFile(file);
    t.notOk('AES_ENCRYPTION_SECRET_PREVIOUS' in keys, 'the old key is gone from the secrets file');
    t.notMatch(readFileSync(file, 'utf8'), oldKey);
    // What the waiting delivery's sender opens: its destination as stored now, under the key left.
    const db = await openEmbeddedDb(join(dataDir, 'pg'));
    t.teardown(() => db.close());
    const store = new DestinationStore(db.db, createCipher(keys.AES_ENCRYPTION_SECRET as string));
    const now = await store.routable('acme', 'd1');
    t.same(store.openSnapshot(now?.snapshot as never).credentials, { secret: 'whsec_1' }, "the sender's read of d1 opens");
  });
});

/** Every destination's sealed columns, to compare before and after. */
async function sealed(dataDir: string): Promise<unknown[]> {
  const db = await openEmbeddedDb(join(dataDir, 'pg'));
  try {
    return await db.db('destinations').select('id', 'credentials', 'delivery_metadata').orderBy('id');
  } finally {
    await db.close();
  }
}

const rotateCli = (env: Record<string, string>) =>
  spawnSync(process.execPath, [join(ROOT, 'shared/src/db/reencrypt-cli.ts')], {
    env: { PATH: process.env.PATH, DATABASE_URL: '', KAFKA_BROKERS: '', ...env },
    encoding: 'utf8',
  });

t.test('API_KEY and API_JWT_SECRET from the environment: rotation needs neither; a failure changes nothing', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sy-rotate-env-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const file = join(dataDir, 'secrets.env');
  // As embedded mode leaves it when the two came from the environment: the file holds the key alone.
  const oldKey = loadSecretsFile(file, { supplied: (name) => name !== 'AES_ENCRYPTION_SECRET' }).values.AES_ENCRYPTION_SECRET as string;
  t.same(Object.keys(readEnvFile(file)), ['AES_ENCRYPTION_SECRET']);

  await copyMigratedEmbeddedDb(join(dataDir, 'pg'));
  const seed = await openEmbeddedDb(join(dataDir, 'pg'));
  await seed.db('tenants').insert({ id: 'acme' });
  const make = (id: string, key: string) =>
    new DestinationStore(seed.db, createCipher(key)).create({
      id,
      tenant_id: 'acme',
      type: 'webhook',
      topics: ['*'],
      config: { url: 'https://example.com/hook' },
      credentials: { secret: `whsec_${id}` },
      delivery_metadata: null,
      metadata: null,
      filter: null,
    });
  await make('d1', oldKey);
  await make('d2', oldKey);
  // Sealed under a key neither of the rotation's reads, and re-encrypted last (rows go in id order):
  // the rows before it are rewritten in the transaction before it fails.
  await make('d9', 'a-key-nobody-has-0123456789abcdef');
  await seed.close();

  const fileBefore = readFileSync(file, 'utf8');
  const rowsBefore = await sealed(dataDir);

  t.test('a setting it uses is bad: refused before anything changes', async (t) => {
    await t.rejects(
      rotateEmbedded({ DATA_DIR: dataDir, AES_ENCRYPTION_SECRET: 'short' }),
      /AES_ENCRYPTION_SECRET: must be at least 32 characters/,
    );
    t.equal(readFileSync(file, 'utf8'), fileBefore, 'secrets.env unchanged');
  });

  t.test('a row no key reads: the transaction rolls back and the file is put back', async (t) => {
    const r = rotateCli({ DATA_DIR: dataDir });
    t.equal(r.status, 1);
    t.notMatch(r.stderr, /is required/, 'no setting it does not use is asked for');
    t.match(r.stderr, /^rotate-encryption-key: .*; nothing was changed\n$/);
    t.equal(readFileSync(file, 'utf8'), fileBefore, 'secrets.env as it was: no new key, no previous key');
    t.same(await sealed(dataDir), rowsBefore, 'every row as it was, d1 and d2 included');
  });

  t.test('once every row is readable, it rotates', async (t) => {
    const db = await openEmbeddedDb(join(dataDir, 'pg'));
    await db.db('destinations').where({ id: 'd9' }).del();
    await db.close();
    const r = rotateCli({ DATA_DIR: dataDir });
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /re-encrypted 2 of 2 destinations under the current key/);
    const keys = readEnvFile(file);
    t.same(Object.keys(keys).sort(), ['AES_ENCRYPTION_SECRET', 'AES_ENCRYPTION_SECRET_PREVIOUS']);
    t.equal(keys.AES_ENCRYPTION_SECRET_PREVIOUS, oldKey);
    const check = await openEmbeddedDb(join(dataDir, 'pg'));
    t.teardown(() => check.close());
    const fresh = new DestinationStore(check.db, createCipher(keys.AES_ENCRYPTION_SECRET as string));
    t.same((await fresh.list('acme')).map((d) => d.credentials.secret).sort(), ['whsec_d1', 'whsec_d2'], 'the new key alone reads them');
  });
});
