// npm run migrate: applies pending migrations to DATABASE_URL. Needs DATABASE_URL only; safe to
// run beside starting services or other migrates (migrateLatest's advisory lock).
import { ConfigError, loadConfig } from '../config/index.ts';
import { createDb, type Knex, migrateLatest } from './index.ts';

let url: string;
try {
  url = loadConfig(process.env, ['DATABASE_URL']).DATABASE_URL;
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  console.error(`migrate: ${err.message}`);
  process.exit(2);
}
if (!url) {
  // Embedded mode (npm start) migrates its own database at start; nothing else may open it meanwhile.
  console.error('DATABASE_URL is not set: the embedded database migrates itself when npm start starts');
  process.exit(1);
}
let db: Knex;
try {
  db = createDb({ url, poolMax: 1 });
} catch (err) {
  // The URL names a file it cannot read (sslrootcert ...).
  console.error(`migrate: the database (DATABASE_URL): ${(err as Error).message}`);
  process.exit(1);
}
try {
  const applied = await migrateLatest(db, {
    warn: (fields, msg) => console.error(`migrate: ${msg} (${Object.values(fields).join(', ')})`),
  });
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} catch (err) {
  console.error(`migrate: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  await db.destroy();
}
