// kinesalite (npm), a Kinesis-protocol server, in this process on a free loopback port; closed at teardown.
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import { listenLocal, type Teardown } from '../index.ts';

const require = createRequire(import.meta.url);

export async function startKinesalite(t: Teardown): Promise<{ port: number; url: string }> {
  const kinesalite = require('kinesalite') as (opts: Record<string, unknown>) => Server;
  // Streams become ACTIVE at once; in memory (no path).
  const server = kinesalite({ createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 1000 });
  const { port, url } = await listenLocal(t, server);
  return { port, url };
}
