/**
 * EGRESS_ALLOW for clients that open their own sockets where no `lookup` can be given (the gRPC
 * channel of @google-cloud/pubsub, the AMQP connection of @azure/service-bus): the host is resolved
 * and checked before the client connects, and refused when no address of it is allowed. The client
 * resolves again when it connects, so a name whose answers change in between (DNS rebinding) is not
 * covered as it is for the types whose sockets take egress.ts's lookup (webhook, kafka, the AWS types).
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { type AllowList, EgressBlockedError, isAllowed, literalBlocked } from './egress.ts';
import { failed, type Outcome } from './sender.ts';

/**
 * The refusal of `host`, or null when it may be reached; `unresolved`: the name did not resolve (left
 * to the client, which fails with the DNS reason), so nothing is known of it yet.
 */
export async function hostBlocked(host: string, allow: AllowList): Promise<EgressBlockedError | null | 'unresolved'> {
  const literal = literalBlocked(host, allow);
  if (literal) return literal;
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(h) !== 0) return null;
  let addresses: Array<{ address: string }>;
  try {
    addresses = await lookup(h, { all: true });
  } catch {
    return 'unresolved';
  }
  return addresses.some((a) => isAllowed(a.address, h, allow))
    ? null
    : new EgressBlockedError(
        h,
        addresses.map((a) => a.address),
      );
}

/**
 * One client's check of its host: the answer is kept for the client's life (a client is rebuilt when
 * its destination changes), unless the name did not resolve: then it is looked up again next time,
 * so a name that resolves later to an address not allowed is refused.
 */
export function hostCheck(host: string, allow: AllowList, check = hostBlocked): () => Promise<Outcome | null> {
  let known: Promise<Outcome | null> | null = null;
  return () => {
    if (known) return known;
    const answer = check(host, allow).then((b) => {
      if (b === 'unresolved') {
        if (known === answer) known = null;
        return null;
      }
      return b ? failed('egress_blocked', b.message) : null;
    });
    known = answer;
    return answer;
  };
}
