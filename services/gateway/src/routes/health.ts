import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../app.ts';
import { answers, ref } from '../openapi.ts';

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
  };
}
