// The walking-skeleton suite (test/e2e/skeleton.test.ts) against the built JavaScript tree (`npm run
// build`), every service its own process: what the Docker image and the benchmark run.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '@switchyard/shared/testing/index.ts';

const out = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'build-'));
process.once('exit', () => rmSync(out, { recursive: true, force: true }));
execFileSync(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'infra/build.ts'), '--out', out], { stdio: 'pipe' });
process.env.SWITCHYARD_E2E_BUILD = out;
await import('../e2e/skeleton.test.ts');
