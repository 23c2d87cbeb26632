// Sender process: consumes the delivery topics of SENDER_TYPES, delivers, writes each attempt, and
// moves failed deliveries through the retry tiers until they are due again.
import { catchSignals, onShutdown, startFailed } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { start } from './service.ts';

catchSignals();
const rt = await createRuntime('sender').catch(startFailed('sender'));
const service = await start(rt).catch(startFailed('sender', rt.logger));
onShutdown(rt.logger, async () => {
  await service.close(); // consumers finish in-flight deliveries and commit first
  await rt.close();
});
