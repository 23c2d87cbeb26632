/**
 * The S3 test peer: infra/s3 (gofakes3, the S3 REST protocol over an in-memory store), a Go peer
 * (go-peer.ts) in its own process; infra/test.sh passes its binary in SWITCHYARD_S3_PEER. It checks
 * no signature: put the AWS gate in front (aws-gate.ts). Stopped at teardown.
 */
import type { Teardown } from '../index.ts';
import { startGoPeer } from './go-peer.ts';

export async function startS3Peer(t: Teardown): Promise<{ port: number; url: string }> {
  const peer = await startGoPeer({ what: 's3 peer', name: 's3', binaryVar: 'SWITCHYARD_S3_PEER' });
  t.teardown(() => peer.close());
  const port = Number(peer.host.slice(peer.host.lastIndexOf(':') + 1));
  return { port, url: `http://${peer.host}` };
}
