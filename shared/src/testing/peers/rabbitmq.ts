// A private RabbitMQ node (Debian's rabbitmq-server) for tests: its own directories, node name,
// AMQP, distribution and epmd ports on loopback; stopped, its epmd with it, at teardown.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, type Teardown } from '../index.ts';
import { startPeerProcess } from './process.ts';

const run = promisify(execFile);
const BIN = '/usr/lib/rabbitmq/bin';

export interface RabbitUser {
  name: string;
  password: string;
}

export interface RabbitMq {
  host: string;
  port: number;
  /** host:port, as a destination's server_url. */
  serverUrl: string;
  /** An administrator (all permissions on /). */
  admin: RabbitUser;
  /** Runs rabbitmqctl against this node. */
  ctl(...args: string[]): Promise<string>;
}

/**
 * Starts a node with `users` (each with all permissions on the default vhost) besides an admin.
 * Fails when rabbitmq-server is not installed (`apt-get install rabbitmq-server`; .ci/run does it).
 */
export async function startRabbitMq(t: Teardown, users: RabbitUser[] = []): Promise<RabbitMq> {
  if (!existsSync(`${BIN}/rabbitmq-server`)) throw new Error('rabbitmq-server is not installed (apt-get install rabbitmq-server)');
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'rabbitmq-'));
  const [port, dist, epmd] = [await freePort(), await freePort(), await freePort()];
  const admin = { name: 'admin', password: `admin-${Date.now()}` };
  const all = [admin, ...users];
  writeFileSync(
    join(dir, 'definitions.json'),
    JSON.stringify({
      vhosts: [{ name: '/' }],
      users: all.map((u) => ({ name: u.name, password: u.password, tags: u === admin ? 'administrator' : '' })),
      permissions: all.map((u) => ({ user: u.name, vhost: '/', configure: '.*', write: '.*', read: '.*' })),
    }),
  );
  writeFileSync(
    join(dir, 'rabbitmq.conf'),
    [`listeners.tcp.default = 127.0.0.1:${port}`, `load_definitions = ${join(dir, 'definitions.json')}`, 'loopback_users = none', ''].join(
      '\n',
    ),
  );
  writeFileSync(join(dir, 'enabled_plugins'), '[].\n');
  writeFileSync(join(dir, 'rabbitmq-env.conf'), '');
  const node = `sy${process.pid}x${port}@localhost`;
  const env = {
    HOME: dir, // the Erlang cookie goes here, not into root's home
    RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
    RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_PID_FILE: join(dir, 'pid'),
    RABBITMQ_LOGS: '-',
    RABBITMQ_NODENAME: node,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(dist),
    ERL_EPMD_PORT: String(epmd),
    ERL_EPMD_ADDRESS: '127.0.0.1',
  };
  t.teardown(async () => {
    // After the node stopped (teardowns run in reverse): its epmd, then its files.
    await run('epmd', ['-port', String(epmd), '-kill'], { env: { ...process.env, ...env } }).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });
  await startPeerProcess(t, 'rabbitmq-server', `${BIN}/rabbitmq-server`, [], {
    cwd: dir,
    env,
    ready: (out) => /Server startup complete/.test(out),
  });
  return {
    host: '127.0.0.1',
    port,
    serverUrl: `127.0.0.1:${port}`,
    admin,
    async ctl(...args) {
      const { stdout } = await run(`${BIN}/rabbitmqctl`, ['-n', node, '-q', ...args], {
        env: { ...process.env, ...env },
        cwd: dir,
        timeout: 60_000,
      });
      return stdout;
    },
  };
}
