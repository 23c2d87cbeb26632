/**
 * Liveness, readiness and metrics of a service process. The gateway serves them on its API port
 * (services/gateway/src/routes/health.ts); the router, sender and attempts service, which have no
 * HTTP server of their own, on a small listener at METRICS_HOST:METRICS_PORT (`serveOps`, started by
 * their main.ts only, so embedded mode serves them once, through the gateway).
 *
 * - `/livez`: 200 while the process runs its event loop (restart it when this fails).
 * - `/readyz`: 200 when Postgres and Kafka (in embedded mode: PGlite and the embedded log) answer
 *   within READY_TIMEOUT_MS, else 503 with the failed check named (take it out of service; it
 *   retries its own work meanwhile).
 * - `/metrics`: the Prometheus text exposition of shared/src/metrics.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Knex } from './db/index.ts';
import type { Bus } from './bus/index.ts';
import type { Logger } from './log.ts';
import { exposition, withTimeout } from './metrics.ts';
import { listenError } from './process.ts';

export const READY_TIMEOUT_MS = 2_000;

export type Check = 'ok' | 'failed';
export interface Readiness {
  ready: boolean;
  checks: { postgres: Check; kafka: Check };
}

/** Checks the database and the log at once, each bounded by READY_TIMEOUT_MS. */
export async function readiness(rt: { db: Knex; bus: Bus }): Promise<Readiness> {
  const check = (p: () => Promise<unknown>): Promise<Check> =>
    withTimeout(p(), READY_TIMEOUT_MS).then(
      () => 'ok' as const,
      () => 'failed' as const,
    );
  const [postgres, kafka] = await Promise.all([check(() => rt.db.raw('select 1')), check(async () => rt.bus.ping?.())]);
  return { ready: postgres === 'ok' && kafka === 'ok', checks: { postgres, kafka } };
}

/** Starts the ops listener (`/livez`, `/readyz`, `/metrics`); resolves once it listens. Port 0 picks a free one. */
export async function serveOps(
  rt: { db: Knex; bus: Bus; logger: Logger },
  host: string,
  port: number,
): Promise<{ server: Server; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return json(405, { code: 'METHOD_NOT_ALLOWED' });
    }
    if (path === '/livez') return json(200, { status: 'alive' });
    if (path === '/readyz' || path === '/healthz') {
      void readiness(rt).then((r) => json(r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not_ready', checks: r.checks }));
      return;
    }
    if (path === '/metrics') {
      void exposition().then(
        (m) => res.writeHead(200, { 'content-type': m.contentType }).end(m.body),
        () => json(500, { code: 'INTERNAL' }),
      );
      return;
    }
    json(404, { code: 'NOT_FOUND' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(listenError({ host: 'METRICS_HOST', port: 'METRICS_PORT' }, host, port, err)));
    server.listen(port, host, () => resolve());
  });
  rt.logger.info({ metrics_port: (server.address() as AddressInfo).port, host }, 'ops listening (/metrics, /livez, /readyz)');
  return {
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
