// Attempts process: stores routed events and attempts in Postgres in batches (offsets committed only
// after each write), and raises alerts on consecutive failures.
import { onShutdown } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { start } from './service.ts';

const rt = await createRuntime('attempts');
const service = await start(rt);
onShutdown(rt.logger, async () => {
  await service.close();
  await rt.close();
});
