// Gateway process: wires concrete dependencies, listens, and shuts down cleanly on signals.
import { onShutdown } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { start } from './service.ts';

const rt = await createRuntime('gateway');
const service = await start(rt);

onShutdown(rt.logger, async () => {
  await service.close();
  await rt.close();
});
