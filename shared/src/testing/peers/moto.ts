// moto (PyPI), AWS services mocked in one server, run from infra/moto.sh on a free loopback port and
// stopped at teardown. It checks no signature: put the AWS gate in front (aws-gate.ts). It keeps
// queues and streams per region, as AWS does: sign with the region they were made in.
import { join } from 'node:path';
import { freePort, ROOT, type Teardown } from '../index.ts';
import { runSetup, startPeerProcess } from './process.ts';

export async function startMoto(t: Teardown, opts: { port?: number } = {}): Promise<{ port: number; url: string }> {
  const server = runSetup(join(ROOT, 'infra/moto.sh'), [], ROOT);
  const port = opts.port ?? (await freePort());
  await startPeerProcess(t, 'moto', server, ['-H', '127.0.0.1', '-p', String(port)], {
    ready: (out) => out.includes(`Running on http://127.0.0.1:${port}`),
  });
  return { port, url: `http://127.0.0.1:${port}` };
}
