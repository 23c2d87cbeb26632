// The benchmark's own stack: a throwaway Kafka broker and Postgres on free loopback ports (as
// infra/test.sh starts them), and the four services as separate processes on a fresh database and
// topic prefix per scenario phase. With `cluster`, the services' Kafka is a three-broker cluster
// (infra/kafka/cluster.sh) instead; the single broker still serves the kafka destination type's
// SASL listener.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, freePort, ROOT, testEnv, uniqueName, waitFor } from '../../shared/src/testing/index.ts';
import { createDb, migrateLatest } from '../../shared/src/db/index.ts';
import { childrenOf } from './proc.ts';

export const SERVICES = ['gateway', 'router', 'sender', 'attempts'] as const;
export type ServiceName = (typeof SERVICES)[number];
/** A process of a deployment: one of the four services, or embedded mode's one process (`npm start`). */
export type ProcessName = ServiceName | 'embedded';

function sh(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', args, { cwd: ROOT, env, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`bash ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout.trim());
    });
  });
}

export interface Infra {
  /** The services' bootstrap list: one broker, or the cluster's three (comma-separated). */
  kafkaBrokers: string;
  /** Three brokers (`--cluster`): topics with replication factor 3 and min.insync.replicas 2. */
  cluster: boolean;
  /** The broker's SASL_PLAINTEXT listener (user switchyard:switchyard-secret), for kafka destinations. */
  kafkaSaslBrokers: string;
  databaseUrl: string;
  kafkaPids(): number[];
  postgresPids(): number[];
  stop(): Promise<void>;
}

/**
 * Starts Kafka and Postgres on free ports in a temporary directory; `stop` removes both.
 * `pgStatements`: Postgres with pg_stat_statements loaded (pg.sh's PG_STAT_STATEMENTS); `cluster`:
 * the services' Kafka is a cluster of three brokers and a controller (infra/kafka/cluster.sh).
 */
export async function startInfra(log: (s: string) => void, o: { pgStatements?: boolean; cluster?: boolean } = {}): Promise<Infra> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench.'));
  chmodSync(dir, 0o755); // the Postgres server runs as the postgres user when we are root
  const env = {
    ...process.env,
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    // A SASL listener as infra/test.sh starts one: the kafka destination type's scenario produces to it.
    KAFKA_SASL_PORT: String(await freePort()),
    KAFKA_DATA_DIR: join(dir, 'kafka'),
    PG_PORT: String(await freePort()),
    PG_DATA_DIR: join(dir, 'pg'),
    PG_FAST: '1',
    ...(o.pgStatements ? { PG_STAT_STATEMENTS: '1' } : {}),
    KAFKA_CLUSTER_DIR: join(dir, 'kafka-cluster'),
    KAFKA_CLUSTER_CONTROLLER_PORT: String(await freePort()),
    KAFKA_CLUSTER_PORTS: [await freePort(), await freePort(), await freePort()].join(','),
  };
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await Promise.allSettled([
      sh(['infra/kafka/kafka.sh', 'stop'], env),
      sh(['infra/postgres/pg.sh', 'stop'], env),
      ...(o.cluster ? [sh(['infra/kafka/cluster.sh', 'stop'], env)] : []),
    ]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [pgOut, kafkaOut] = await Promise.all([sh(['infra/postgres/pg.sh', 'start'], env), sh(['infra/kafka/kafka.sh', 'start'], env)]);
    log(pgOut.split('\n').at(-1) ?? '');
    log(kafkaOut.split('\n').at(-1) ?? '');
    // After the single broker: both fetch the same Kafka jars on a fresh clone.
    if (o.cluster) log((await sh(['infra/kafka/cluster.sh', 'start'], env)).split('\n').at(-1) ?? '');
  } catch (err) {
    await stop();
    throw err;
  }
  const pidFile = (f: string) => {
    try {
      return Number(readFileSync(f, 'utf8').split('\n')[0]);
    } catch {
      return 0;
    }
  };
  const clusterPorts = env.KAFKA_CLUSTER_PORTS.split(',');
  return {
    kafkaBrokers: o.cluster ? clusterPorts.map((p) => `127.0.0.1:${p}`).join(',') : `127.0.0.1:${env.KAFKA_PORT}`,
    cluster: o.cluster ?? false,
    kafkaSaslBrokers: `127.0.0.1:${env.KAFKA_SASL_PORT}`,
    databaseUrl: `postgres://postgres@127.0.0.1:${env.PG_PORT}/switchyard`,
    // The brokers the services use (with --cluster, also its controller, node 0).
    kafkaPids: () => {
      const files = o.cluster
        ? [0, 1, 2, 3].map((n) => join(env.KAFKA_CLUSTER_DIR, `node-${n}`, 'pid'))
        : [join(env.KAFKA_DATA_DIR, 'broker.pid')];
      return files.map(pidFile).filter((p) => p > 0);
    },
    postgresPids: () => {
      const p = pidFile(join(env.PG_DATA_DIR, 'postmaster.pid'));
      return p ? [p, ...childrenOf(p)] : [];
    },
    stop,
  };
}

export interface Service {
  name: ProcessName;
  /** 1, or 2 and up for the extra instances of `DeployOptions.senders`. */
  instance: number;
  child: ChildProcess;
  logFile: string;
  exited: Promise<number | null>;
  /** Epoch ms of the exit, once exited. */
  exitedAt: number | null;
  tail(lines?: number): string;
}

export interface Deployment {
  env: Record<string, string>;
  gatewayUrl: string;
  apiKey: string;
  services: Service[];
  /** Rejects when a service exits before `stop`. */
  crashed: Promise<never>;
  stop(): Promise<void>;
}

export interface DeployOptions {
  /** The broker and Postgres of the stack; embedded mode (deployEmbedded) needs neither. */
  infra: Infra;
  /** Where service logs (and profiles) go. */
  dir: string;
  label: string;
  logLevel: string;
  /** Directory for `node --cpu-prof` output; no profiling when absent. */
  profileDir?: string;
  /** A checkout whose services/ to run (bench/tree.sh), for A/B runs; this one by default. */
  servicesRoot?: string;
  /** A tree built by infra/build.ts: run its services/<name>/src/main.js (as production does) instead of the sources. */
  built?: string;
  env?: Record<string, string>;
  /** Flags for each service's node command line, before its main module. */
  nodeFlags?: readonly string[];
  /** Sender processes (default 1): more join the same consumer group, as a scaled deployment runs. */
  senders?: number;
}

/**
 * Starts the four services on a fresh database and topic prefix. Each is `node services/<name>/src/main.ts`
 * (or its built .js)
 * in its own process (as shared/src/testing startService does), but with its output going to a log file
 * rather than into this process's memory, and optionally under `--cpu-prof`.
 */
export async function deploy(o: DeployOptions): Promise<Deployment> {
  const teardowns: Array<() => unknown> = [];
  const databaseUrl = await createTestDatabase({ teardown: (fn) => teardowns.push(fn) });
  const env = {
    DATABASE_URL: databaseUrl,
    KAFKA_BROKERS: o.infra.kafkaBrokers,
    KAFKA_TOPIC_PREFIX: `${uniqueName('bench')}.`,
    // A cluster's production settings (docs/operations.md, "Production topology"); testEnv's are a single broker's.
    ...(o.infra.cluster ? { KAFKA_REPLICATION_FACTOR: '3', KAFKA_MIN_INSYNC_REPLICAS: '2' } : {}),
  };
  return launched(o, env, teardowns, async (launch) => {
    // Migrations first, here, so the four services start together without queueing on the lock.
    const db = createDb({ url: databaseUrl, poolMax: 1 });
    try {
      await migrateLatest(db);
    } finally {
      await db.destroy();
    }
    for (const name of SERVICES) launch.start(name);
    for (let i = 2; i <= (o.senders ?? 1); i++) launch.start('sender', i);
  });
}

/**
 * The V8 flags `npm start` runs embedded mode with: those of infra/start.sh's `exec node` line (`text`
 * is the script). Throws when the line is not there, so a changed script cannot leave the bench on
 * other flags than users get.
 */
export function startFlags(text: string): string[] {
  const line = /^exec node ((?:--\S+ )+)dist\/services\/embedded\/src\/main\.js/m.exec(text);
  if (!line?.[1]) throw new Error('infra/start.sh: no `exec node --flags dist/services/embedded/src/main.js` line');
  return line[1].trim().split(' ');
}

/**
 * Embedded mode as `npm start` runs it: gateway, router, sender and attempts in one process
 * (`services/embedded`), on the embedded log and PGlite in a fresh DATA_DIR, removed at stop.
 */
export async function deployEmbedded(o: Omit<DeployOptions, 'infra' | 'senders'>): Promise<Deployment> {
  const teardowns: Array<() => unknown> = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'switchyard-bench-embedded.'));
  teardowns.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { KAFKA_BROKERS: '', DATABASE_URL: '', DATA_DIR: dataDir, KAFKA_TOPIC_PREFIX: 'switchyard.' };
  return launched(o, env, teardowns, (launch) => void launch.start('embedded'));
}

/**
 * Starts a deployment's processes (`startAll`) on a free API port with the bench's settings plus
 * `env`, and waits for the gateway; on any failure stops what started and runs `teardowns`.
 */
async function launched(
  o: Omit<DeployOptions, 'infra' | 'senders'>,
  env: Record<string, string>,
  teardowns: Array<() => unknown>,
  startAll: (launch: ReturnType<typeof launcher>) => void | Promise<void>,
): Promise<Deployment> {
  const port = await freePort();
  const launch = launcher(
    o,
    testEnv({ ...env, KAFKA_PARTITIONS: '12', API_PORT: String(port), LOG_LEVEL: o.logLevel, EGRESS_ALLOW: '127.0.0.0/8', ...o.env }),
    teardowns,
  );
  try {
    await startAll(launch);
    return await launch.ready(port);
  } catch (err) {
    await launch.stop();
    throw err;
  }
}

/** Starts processes of one deployment (`start`), waits for the gateway (`ready`), stops them all and runs `teardowns` (`stop`). */
function launcher(o: Omit<DeployOptions, 'infra' | 'senders'>, env: Record<string, string>, teardowns: Array<() => unknown>) {
  const services: Service[] = [];
  let stopping = false;
  let onCrash: (err: Error) => void = () => {};
  const crashed = new Promise<never>((_, reject) => {
    onCrash = reject;
  });
  crashed.catch(() => {});

  const start = (name: ProcessName, instance = 1): Service => {
    const logFile = join(o.dir, `${o.label}-${name}${instance > 1 ? `-${instance}` : ''}.log`);
    const fd = openSync(logFile, 'a');
    const flags = o.profileDir
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${o.profileDir}`,
          `--cpu-prof-name=${o.label}-${name}${instance > 1 ? `-${instance}` : ''}.cpuprofile`,
        ]
      : [];
    const root = o.servicesRoot ?? ROOT;
    const main = o.built ? join(o.built, `services/${name}/src/main.js`) : join(root, `services/${name}/src/main.ts`);
    const child = spawn(process.execPath, [...flags, ...(o.nodeFlags ?? []), main], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    const tail = (lines = 30) => {
      try {
        return readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n');
      } catch {
        return '';
      }
    };
    const svc: Service = { name, instance, child, logFile, exited: Promise.resolve(null), exitedAt: null, tail };
    svc.exited = new Promise<number | null>((r) =>
      child.once('exit', (code) => {
        svc.exitedAt = Date.now();
        if (!stopping) onCrash(new Error(`${name} exited with ${code} during the run:\n${tail()}`));
        r(code);
      }),
    );
    services.push(svc);
    return svc;
  };

  const stop = async () => {
    stopping = true;
    // Services exit on SIGTERM after finishing in-flight work (and write their profiles then).
    await Promise.all(
      services.map(async (s) => {
        if (s.child.exitCode !== null || s.child.signalCode !== null) return;
        s.child.kill('SIGTERM');
        const t = setTimeout(() => s.child.kill('SIGKILL'), 40_000);
        await s.exited;
        clearTimeout(t);
      }),
    );
    for (const fn of teardowns.reverse()) await fn();
  };

  const ready = async (port: number): Promise<Deployment> => {
    const gatewayUrl = `http://127.0.0.1:${port}`;
    await Promise.race([
      crashed,
      waitFor(
        'gateway health',
        async () => {
          const r = await fetch(`${gatewayUrl}/healthz`);
          return r.status === 200;
        },
        90_000,
      ),
    ]);
    return { env, gatewayUrl, apiKey: env.API_KEY as string, services, crashed, stop };
  };
  return { start, ready, stop };
}
