// Gateway process: wires concrete dependencies, listens, and shuts down cleanly on signals.
import { catchSignals, onShutdown, shutdownGraceMs, startFailed } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { start } from './service.ts';

catchSignals();
const rt = await createRuntime('gateway').catch(startFailed('gateway'));
const service = await start(rt).catch(startFailed('gateway', rt.logger));

// The grace outlasts a publish under way at the signal (PUBLISH_TIMEOUT_MS).
onShutdown(
  rt.logger,
  async () => {
    await service.close();
    await rt.close();
  },
  shutdownGraceMs(rt.config.PUBLISH_TIMEOUT_MS),
);
