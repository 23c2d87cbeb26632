// Gateway: the HTTP API on API_HOST:API_PORT, wired to a runtime (main.ts: its own process;
// services/embedded: every service in one process).
import { readiness } from '@switchyard/shared/ops.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import { build } from './app.ts';

export async function start(rt: Runtime): Promise<Service> {
  const producer = await rt.bus.producer();
  // The embedded log's appends share one fdatasync while one is under way, so holding a publish
  // there only delays its answer (docs/performance.md, "Gateway linger").
  const config = rt.mode.log === 'embedded' ? { ...rt.config, PUBLISH_LINGER_MS: 0 } : rt.config;
  const app = await build(config, {
    db: rt.db,
    cipher: rt.cipher,
    producer,
    logger: rt.logger,
    readiness: () => readiness(rt),
    tracing: rt.tracing,
    readLag: rt.bus.lag?.bind(rt.bus),
  });
  await app.listen({ port: config.API_PORT, host: config.API_HOST });
  return {
    async close() {
      await app.close(); // stops accepting, lets in-flight requests finish
    },
  };
}
