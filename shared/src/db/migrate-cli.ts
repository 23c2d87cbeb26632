// npm run migrate: applies pending migrations to DATABASE_URL.
import { loadConfig } from '../config/index.ts';
import { createDb, migrateLatest } from './index.ts';

const config = loadConfig();
const db = createDb({ url: config.DATABASE_URL, poolMax: 1 });
try {
  const applied = await migrateLatest(db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} finally {
  await db.destroy();
}
