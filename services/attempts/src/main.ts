// Attempts process: stores routed events and attempts in Postgres in batches (offsets committed only
// after each write), and raises alerts on consecutive failures.
import { catchSignals, onShutdown, startFailed } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { start } from './service.ts';

catchSignals();
const rt = await createRuntime('attempts').catch(startFailed('attempts'));
const service = await start(rt).catch(startFailed('attempts', rt.logger));
onShutdown(rt.logger, async () => {
  await service.close();
  await rt.close();
});
