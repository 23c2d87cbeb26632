// The guard every change to kafkajs's internals in this folder takes: each one is written against
// one kafkajs version's private modules (and produce.ts reproduces its bytes), so each refuses to
// load on any other. package.json pins kafkajs exactly; after an upgrade, review each patch against
// the new version (and its test), then change PATCHED_KAFKAJS, or drop the patch (docs/architecture.md,
// "kafkajs patches").
import { createRequire } from 'node:module';

/** The kafkajs version the patches here were written for and tested on. */
export const PATCHED_KAFKAJS = '2.2.4';

const require = createRequire(import.meta.url);

/** The kafkajs version installed (the one `import 'kafkajs'` loads from here). */
export function installedKafkajs(): string {
  return (require('kafkajs/package.json') as { version: string }).version;
}

/** Throws unless `installed` is PATCHED_KAFKAJS: called by each patch as it loads, before it touches kafkajs. */
export function assertPatchedKafkajs(patch: string, installed: string = installedKafkajs()): void {
  if (installed !== PATCHED_KAFKAJS) {
    throw new Error(
      `kafkajs ${installed} is installed but shared/src/kafka/kafkajs/${patch} patches kafkajs ${PATCHED_KAFKAJS}: ` +
        'review the patch against the installed version and update PATCHED_KAFKAJS, or drop it (docs/architecture.md, "kafkajs patches")',
    );
  }
}
