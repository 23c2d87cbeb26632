import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../app.ts';

export function healthRoutes(ctx: Ctx) {
  return async (app: FastifyInstance) => {
    const handler = async (_req: unknown, reply: { status(n: number): unknown }) => {
      const checks: Record<string, 'ok' | 'failed'> = {};
      try {
        await ctx.db.raw('select 1');
        checks.postgres = 'ok';
      } catch {
        checks.postgres = 'failed';
      }
      const healthy = Object.values(checks).every((c) => c === 'ok');
      reply.status(healthy ? 200 : 503);
      return { status: healthy ? 'healthy' : 'failed', checks };
    };
    for (const url of ['/healthz', '/api/v1/healthz'])
      app.get(
        url,
        { config: { public: true }, schema: { tags: ['health'], summary: 'Liveness and dependencies; no credential needed' } },
        handler,
      );
  };
}
