// Sender process: consumes the delivery topics of SENDER_TYPES, delivers, writes each attempt, and
// moves failed deliveries through the retry tiers until they are due again.
import { serveOps } from '@switchyard/shared/ops.ts';
import { catchSignals, onShutdown, shutdownGraceMs, startFailed } from '@switchyard/shared/process.ts';
import { loadServiceConfig } from '@switchyard/shared/config/index.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { withEgressCheck } from './egress.ts';
import { start } from './service.ts';

catchSignals();
const rt = await (async () => {
  const config = withEgressCheck(() => loadServiceConfig('sender'), process.env);
  return createRuntime('sender', config);
})().catch(startFailed('sender'));
// /metrics, /livez, /readyz on METRICS_HOST:METRICS_PORT (shared/src/ops.ts), bound first: a port
// in use is one line at start, before the service joins its consumer groups.
const ops = await serveOps(rt, rt.config.METRICS_HOST, rt.config.METRICS_PORT).catch(startFailed('sender', rt.logger));
const service = await start(rt).catch(startFailed('sender', rt.logger));
// The grace outlasts a delivery under way at the signal (DELIVERY_TIMEOUT_SECONDS).
onShutdown(
  rt.logger,
  async () => {
    await service.close(); // consumers finish in-flight deliveries and commit first
    await ops.close();
    await rt.close();
  },
  shutdownGraceMs(rt.config.DELIVERY_TIMEOUT_SECONDS * 1000),
);
