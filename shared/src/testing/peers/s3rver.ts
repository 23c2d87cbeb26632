// s3rver (npm), an S3-protocol server, in this process on a free loopback port with its own
// directory; closed and removed at teardown. It knows one access key, S3RVER (secret S3RVER).
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Teardown } from '../index.ts';

const require = createRequire(import.meta.url);

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}

export const S3RVER_KEY = 'S3RVER';

export async function startS3rver(t: Teardown): Promise<{ port: number; url: string }> {
  const S3rver = require('s3rver') as new (opts: Record<string, unknown>) => S3rverInstance;
  const directory = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 's3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await server.run();
  t.teardown(async () => {
    await server.close();
    rmSync(directory, { recursive: true, force: true });
  });
  return { port, url: `http://127.0.0.1:${port}` };
}
