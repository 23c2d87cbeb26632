// npm run migrate: applies pending migrations to DATABASE_URL.
import { loadConfig } from '../config/index.ts';
import { createDb, migrateLatest } from './index.ts';

const config = loadConfig();
if (!config.DATABASE_URL) {
  // Embedded mode (npm start) migrates its own database at start; nothing else may open it meanwhile.
  console.error('DATABASE_URL is not set: the embedded database migrates itself when npm start starts');
  process.exit(1);
}
const db = createDb({ url: config.DATABASE_URL, poolMax: 1 });
try {
  const applied = await migrateLatest(db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} finally {
  await db.destroy();
}
