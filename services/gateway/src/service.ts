// Gateway: the HTTP API on API_HOST:API_PORT, wired to a runtime (main.ts: its own process;
// services/embedded: every service in one process).
import { readiness } from '@switchyard/shared/ops.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import { build } from './app.ts';

export async function start(rt: Runtime): Promise<Service> {
  const producer = await rt.bus.producer();
  const app = await build(rt.config, {
    db: rt.db,
    cipher: rt.cipher,
    producer,
    logger: rt.logger,
    readiness: () => readiness(rt),
    tracing: rt.tracing,
    readLag: rt.bus.lag?.bind(rt.bus),
  });
  await app.listen({ port: rt.config.API_PORT, host: rt.config.API_HOST });
  return {
    async close() {
      await app.close(); // stops accepting, lets in-flight requests finish
    },
  };
}
