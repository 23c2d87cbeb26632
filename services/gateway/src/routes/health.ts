import type { FastifyInstance } from 'fastify';
import { exposition, withTimeout } from '@switchyard/shared/metrics.ts';
import type { Knex } from '@switchyard/shared/db/index.ts';
import { READY_TIMEOUT_MS, type Readiness } from '@switchyard/shared/ops.ts';
import { answers, ref } from '../openapi.ts';

// Probes and metrics need no credential and are operations' endpoints, not API operations: left out
// of the OpenAPI document (docs/operations.md describes them).
// They need no credential (shared/src/ops.ts says what each answers). /metrics carries
// no tenant or destination ids; a deployment that exposes the API publicly should still keep it
// from the internet at its ingress (docs/operations.md).
export interface HealthRouteDeps {
  /** Answers /healthz's `select 1` (within READY_TIMEOUT_MS). */
  db: Knex;
  readiness: () => Promise<Readiness>;
}

export function healthRoutes(deps: HealthRouteDeps) {
  return async (app: FastifyInstance) => {
    const handler = async (_req: unknown, reply: { status(n: number): unknown }) => {
      const checks: Record<string, 'ok' | 'failed'> = {};
      try {
        // Bounded as /readyz is: a database that hangs (not refusing) fails the probe, never holds it.
        await withTimeout(deps.db.raw('select 1'), READY_TIMEOUT_MS);
        checks.postgres = 'ok';
      } catch {
        checks.postgres = 'failed';
      }
      const healthy = Object.values(checks).every((c) => c === 'ok');
      reply.status(healthy ? 200 : 503);
      // `workers` repeats the checks as the other service's answer has them: its SDKs require it.
      const workers = Object.fromEntries(Object.entries(checks).map(([k, c]) => [k, { status: c === 'ok' ? 'healthy' : 'failed' }]));
      return { status: healthy ? 'healthy' : 'failed', timestamp: new Date().toISOString(), checks, workers };
    };
    for (const url of ['/healthz', '/api/v1/healthz'])
      app.get(
        url,
        {
          config: { public: true },
          schema: {
            tags: ['health'],
            summary: 'Liveness and dependencies; no credential needed',
            response: answers({ 200: 'Health', 503: { ...ref('Health'), description: 'A dependency failed.' } }),
          },
        },
        handler,
      );
    app.get(
      '/livez',
      {
        config: { public: true },
        schema: { tags: ['health'], summary: 'Liveness: 200 while the process serves requests; no credential needed', hide: true },
      },
      async () => ({ status: 'alive' }),
    );
    app.get(
      '/readyz',
      {
        config: { public: true },
        schema: {
          tags: ['health'],
          summary: 'Readiness: 200 when Postgres and Kafka answer, else 503 naming the failed check; no credential needed',
          hide: true,
        },
      },
      async (_req, reply) => {
        const r = await deps.readiness();
        reply.status(r.ready ? 200 : 503);
        return { status: r.ready ? 'ready' : 'not_ready', checks: r.checks };
      },
    );
    app.get(
      '/metrics',
      {
        config: { public: true },
        schema: { tags: ['health'], summary: 'Prometheus metrics (text exposition format); no credential needed', hide: true },
      },
      async (_req, reply) => {
        const m = await exposition();
        reply.type(m.contentType);
        return m.body;
      },
    );
  };
}
