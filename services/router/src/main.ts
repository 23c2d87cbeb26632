// Router process: events topic -> one delivery record per matching destination, on that type's topic.
import { serveOps } from '@switchyard/shared/ops.ts';
import { onShutdown } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { start } from './service.ts';

const rt = await createRuntime('router');
const service = await start(rt);
// /metrics, /livez, /readyz on METRICS_HOST:METRICS_PORT (shared/src/ops.ts).
const ops = await serveOps(rt, rt.config.METRICS_HOST, rt.config.METRICS_PORT);
onShutdown(rt.logger, async () => {
  await service.close();
  await ops.close();
  await rt.close();
});
