// npm run start:stack: the whole service on this machine as in production, each service its own
// process. Starts a local Kafka broker and Postgres (installing them on first run) unless
// KAFKA_BROKERS / DATABASE_URL point elsewhere, with prefixed logs. Ctrl-C stops the services
// (Kafka and Postgres keep running for the next start; npm run infra:down stops them).
// (npm start runs embedded mode instead: services/embedded, one process, nothing to install.)
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '../../shared/src/config/index.ts';
import { loadSecretsFile } from '../../shared/src/secrets-file.ts';
import { withEgressCheck } from '../../services/sender/src/egress.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const secretsFile = `${root}.tools/dev-secrets.env`;

const env: Record<string, string> = {
  // Development secrets are generated once and kept under .tools/, never committed.
  ...loadSecretsFile(secretsFile, { supplied: (name) => Boolean(process.env[name]) }).values,
  EGRESS_ALLOW: '127.0.0.0/8,::1/128',
  // The local broker and database started below (each service on its own needs both set).
  KAFKA_BROKERS: '127.0.0.1:9092',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/switchyard',
  // One local broker holds one copy (docs/operations.md, "Production topology": a cluster keeps 3 and 2).
  KAFKA_REPLICATION_FACTOR: '1',
  KAFKA_MIN_INSYNC_REPLICAS: '1',
  ...(Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined)) as Record<string, string>),
};
let config: ReturnType<typeof loadConfig>;
try {
  // Fail fast, listing every problem (EGRESS_ALLOW's entries too, as the sender reads them), before anything is started.
  config = withEgressCheck(() => loadConfig(env), env);
  // The router and the sender take the two ports after METRICS_PORT (below).
  if (config.METRICS_PORT > 65533) {
    throw new ConfigError(['METRICS_PORT: must be at most 65533 here (router and sender take the next two ports), or 0 for free ones']);
  }
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  // One line, as a service prints it (shared/src/process.ts): no stack trace.
  process.stderr.write(`switchyard start:stack: ${err.message}\n`);
  process.exit(2);
}

if (!process.env.KAFKA_BROKERS) execFileSync('bash', [`${root}infra/kafka/kafka.sh`, 'start'], { stdio: 'inherit' });
if (!process.env.DATABASE_URL) execFileSync('bash', [`${root}infra/postgres/pg.sh`, 'start'], { stdio: 'inherit' });

const children: ChildProcess[] = [];
function run(name: string, extra: Record<string, string> = {}) {
  const child = spawn(process.execPath, [`${root}services/${name}/src/main.ts`], {
    env: { ...env, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) createInterface({ input: stream }).on('line', (line) => console.log(`${name.padEnd(8)} | ${line}`));
  }
  child.on('exit', (code, signal) => {
    console.log(`${name.padEnd(8)} | exited (${signal ?? code})`);
    if (!stopping) shutdown(1);
  });
  children.push(child);
}

let stopping = false;
function shutdown(code: number) {
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  // Past the services' own grace (30 s), so none is left running on its own.
  setTimeout(() => process.exit(code), 35_000).unref();
  Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r))))).then(() => process.exit(code));
}
// Ctrl-C reaches the services too (one process group); the SIGTERM sent after it is ignored by
// them as the same request (shared/src/process.ts), so the stop stays graceful.
process.on('SIGINT', () => stopping || shutdown(0));
process.on('SIGTERM', () => stopping || shutdown(0));

// One host: each service's metrics and health listener on its own port (0: each a free one, logged).
const opsPort = (n: number) => String(config.METRICS_PORT === 0 ? 0 : config.METRICS_PORT + n);
run('attempts', { METRICS_PORT: opsPort(0) });
run('router', { METRICS_PORT: opsPort(1) });
run('sender', { METRICS_PORT: opsPort(2) });
run('gateway');
const where = config.API_PORT === 0 ? `${config.API_HOST}, on the port the gateway logs` : `http://${config.API_HOST}:${config.API_PORT}`;
console.log(`\nSwitchyard is starting on ${where}  (admin API key in ${secretsFile})\n`);
