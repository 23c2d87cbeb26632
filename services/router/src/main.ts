// Router process: events topic -> one delivery record per matching destination, on that type's topic.
import { catchSignals, onShutdown, startFailed } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { start } from './service.ts';

catchSignals();
const rt = await createRuntime('router').catch(startFailed('router'));
const service = await start(rt).catch(startFailed('router', rt.logger));
onShutdown(rt.logger, async () => {
  await service.close();
  await rt.close();
});
