// Router process: events topic -> one delivery record per matching destination, on that type's topic.
import { onShutdown } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { start } from './service.ts';

const rt = await createRuntime('router');
const service = await start(rt);
onShutdown(rt.logger, async () => {
  await service.close();
  await rt.close();
});
