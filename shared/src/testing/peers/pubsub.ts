/**
 * The Pub/Sub test peer: infra/pubsub (Google's pstest, serving the real Pub/Sub gRPC protocol), a
 * Go peer (go-peer.ts); infra/test.sh passes its binary in SWITCHYARD_PUBSUB_PEER.
 */
import { type GoPeer, startGoPeer } from './go-peer.ts';

/** Its `host` is host:port, as PUBSUB_EMULATOR_HOST and a destination's `endpoint` take it. */
export function startPubSubPeer(): Promise<GoPeer> {
  return startGoPeer({ what: 'pubsub peer', name: 'pubsub', binaryVar: 'SWITCHYARD_PUBSUB_PEER' });
}
