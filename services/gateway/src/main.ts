// Gateway process: wires concrete dependencies, listens, and shuts down cleanly on signals.
import { onShutdown } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { build } from './app.ts';

const rt = await createRuntime('gateway');
const producer = await rt.bus.producer();
const app = await build(rt.config, { db: rt.db, cipher: rt.cipher, producer, logger: rt.logger });
await app.listen({ port: rt.config.API_PORT, host: rt.config.API_HOST });

onShutdown(rt.logger, async () => {
  await app.close(); // stops accepting, lets in-flight requests finish
  await rt.close();
});
