// Gateway: the HTTP API on API_HOST:API_PORT, wired to a runtime (main.ts: its own process;
// services/embedded: every service in one process).
import { readiness } from '@switchyard/shared/ops.ts';
import { listenError } from '@switchyard/shared/process.ts';
import type { Config } from '@switchyard/shared/config/index.ts';
import type { Runtime, Service } from '@switchyard/shared/runtime.ts';
import { build, listeningUrl } from './app.ts';

/**
 * The gateway's settings on its log: no publish linger on the embedded log, whose appends share
 * one fdatasync while one is under way, so holding a publish there only delays its answer
 * (docs/performance.md, "Gateway linger").
 */
export function gatewayConfig(config: Config, log: Runtime['mode']['log']): Config {
  return log === 'embedded' ? { ...config, PUBLISH_LINGER_MS: 0 } : config;
}

/** The gateway, listening; `url` is where (the bound port when API_PORT is 0). */
export async function start(rt: Runtime): Promise<Service & { readonly url: string }> {
  const producer = await rt.bus.producer();
  const config = gatewayConfig(rt.config, rt.mode.log);
  const app = await build(config, {
    db: rt.db,
    cipher: rt.cipher,
    producer,
    logger: rt.logger,
    readiness: () => readiness(rt),
    tracing: rt.tracing,
    readLag: rt.bus.lag?.bind(rt.bus),
  });
  await app.listen({ port: config.API_PORT, host: config.API_HOST }).catch(async (err: unknown) => {
    await app.close();
    throw listenError({ host: 'API_HOST', port: 'API_PORT' }, config.API_HOST, config.API_PORT, err);
  });
  return {
    url: listeningUrl(config, app),
    async close() {
      await app.close(); // stops accepting, lets in-flight requests finish
    },
  };
}
