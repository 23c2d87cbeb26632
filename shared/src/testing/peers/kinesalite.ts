// kinesalite (npm), a Kinesis-protocol server, in this process on a free loopback port; closed at teardown.
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Teardown } from '../index.ts';

const require = createRequire(import.meta.url);

export async function startKinesalite(t: Teardown): Promise<{ port: number; url: string }> {
  const kinesalite = require('kinesalite') as (opts: Record<string, unknown>) => Server;
  // Streams become ACTIVE at once; in memory (no path).
  const server = kinesalite({ createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 1000 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { port, url: `http://127.0.0.1:${port}` };
}
