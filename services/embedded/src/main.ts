// Embedded mode (npm start): gateway, router, sender and attempts in this one process, on one runtime.
// With KAFKA_BROKERS and DATABASE_URL empty (the defaults) that runtime is the embedded log and the
// embedded database under DATA_DIR, so nothing else needs to be installed or running.
//
// This package is a composition root, not a service: it is the one place allowed to import the
// services' start functions (docs/architecture.md, "Embedded mode"). The services never import
// each other.
import { start as startAttempts } from '@switchyard/attempts/src/service.ts';
import { start as startGateway } from '@switchyard/gateway/src/service.ts';
import { start as startRouter } from '@switchyard/router/src/service.ts';
import { start as startSender, withEgressCheck } from '@switchyard/sender/src/service.ts';
import { ConfigError, loadConfig } from '@switchyard/shared/config/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import { catchSignals, DependencyError, onShutdown, shutdownGraceMs, startFailed } from '@switchyard/shared/process.ts';
import { createRuntime, type Runtime, type Service } from '@switchyard/shared/runtime.ts';
import { releaseStartupMemory } from './memory.ts';
import { banner, discardCreatedSecrets, type Prepared, prepare } from './setup.ts';

catchSignals();
// Every directory and file this process makes is its owner's alone, whatever the mode of a DATA_DIR
// that already existed: they hold every event. (PGlite sets its files' modes itself, 0666: the
// directories holding them keep them private.)
process.umask(0o077);
let prepared: Prepared | undefined;
let rt: Runtime;
try {
  const check = (env: Record<string, string>) => withEgressCheck(() => loadConfig(env), env);
  prepared = prepare(process.env, check);
  const loaded = check(prepared.env);
  rt = await createRuntime('embedded', loaded, { embedded: true });
} catch (err) {
  // A bad setting or a DATA_DIR that cannot be one (exit code 2, every problem on one line), a
  // dependency that failed (one line naming it, exit code 1), or the data directory held by
  // another process: say so plainly.
  discardCreatedSecrets(prepared);
  if (err instanceof ConfigError || err instanceof DependencyError) startFailed('embedded')(err);
  console.error(`switchyard: ${(err as Error).message}`);
  process.exit(1);
}
const { config } = rt;
// Each service logs under its own name, as it would in its own process.
const as = (name: string): Runtime => ({ ...rt, logger: createLogger(name, config.LOG_LEVEL) });

// Consumers first, the HTTP API last: by the time it answers, everything behind it runs.
const started: Service[] = [];
let url = '';
try {
  started.push(await startAttempts(as('attempts')));
  started.push(await startSender(as('sender')));
  started.push(await startRouter(as('router')));
  const gateway = await startGateway(as('gateway'));
  started.push(gateway);
  url = gateway.url;
} catch (err) {
  // A port in use (DependencyError) is one line, as a bad setting is; anything else logs its stack.
  if (!(err instanceof DependencyError)) rt.logger.fatal({ err }, 'embedded mode failed to start');
  for (const s of started.reverse()) await s.close().catch(() => undefined);
  await rt.close();
  discardCreatedSecrets(prepared);
  if (err instanceof DependencyError) startFailed('embedded')(err);
  process.exit(1);
}

process.stdout.write(banner({ url, prepared, mode: rt.mode, egressAllow: config.EGRESS_ALLOW }));
rt.logger.info({ url, data_dir: prepared.dataDir, mode: rt.mode }, 'embedded mode ready');
// Start-up's young generation and glibc's scratch pages back to the kernel: idle RSS under its goal.
const released = await releaseStartupMemory();
rt.logger.debug({ released_mb: Math.round(released.rssBytes / 2 ** 20), trimmed: released.trimmed }, 'start-up memory released');

// Reverse order: the gateway stops taking requests first, the attempts service finishes last. The
// grace outlasts a delivery or a publish under way at the signal.
onShutdown(
  rt.logger,
  async () => {
    for (const s of started.reverse()) await s.close();
    await rt.close();
  },
  shutdownGraceMs(Math.max(config.DELIVERY_TIMEOUT_SECONDS * 1000, config.PUBLISH_TIMEOUT_MS)),
);
