// Attempts process: stores routed events and attempts in Postgres in batches (offsets committed only
// after each write), and raises alerts on consecutive failures.
import { serveOps } from '@switchyard/shared/ops.ts';
import { catchSignals, onShutdown, startFailed } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { start } from './service.ts';

catchSignals();
const rt = await createRuntime('attempts').catch(startFailed('attempts'));
// /metrics, /livez, /readyz on METRICS_HOST:METRICS_PORT (shared/src/ops.ts), bound first: a port
// in use is one line at start, before the service joins its consumer groups.
const ops = await serveOps(rt, rt.config.METRICS_HOST, rt.config.METRICS_PORT).catch(startFailed('attempts', rt.logger));
const service = await start(rt).catch(startFailed('attempts', rt.logger));
onShutdown(rt.logger, async () => {
  await service.close();
  await ops.close();
  await rt.close();
});
