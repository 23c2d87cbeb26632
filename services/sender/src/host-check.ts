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

/** The refusal of `host`, or null when it may be reached. DNS failures are left to the client. */
export async function hostBlocked(host: string, allow: AllowList): Promise<EgressBlockedError | null> {
  const literal = literalBlocked(host, allow);
  if (literal) return literal;
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(h) !== 0) return null;
  let addresses: Array<{ address: string }>;
  try {
    addresses = await lookup(h, { all: true });
  } catch {
    return null;
  }
  return addresses.some((a) => isAllowed(a.address, h, allow))
    ? null
    : new EgressBlockedError(
        h,
        addresses.map((a) => a.address),
      );
}
