/**
 * servicebus delivery (../shared/spec/contract-details.md, "How each type delivers"): one message sent
 * with @azure/service-bus to the queue or topic `name` of the namespace in `connection_string`; the
 * body is the event data (JSON, content type application/json), the message id the event id (so a
 * namespace with duplicate detection drops a retry it already has), and the metadata map becomes
 * application properties.
 *
 * One ServiceBusClient and one sender link per destination, reused by its deliveries and closed when
 * the destination changes (clients.ts). The SDK does not retry (the schedule does), and its
 * connection goes to the namespace host only after EGRESS_ALLOW admits it (host-check.ts).
 */
import { isServiceBusError, ServiceBusClient, type ServiceBusSender } from '@azure/service-bus';
import type { AllowList } from '../egress.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { hostCheck } from '../host-check.ts';
import { metadataOf } from '../metadata.ts';
import { type FailureReason, failed, type Outcome, succeeded, type TypeSender } from '../sender.ts';

export interface ServiceBusSenderOptions {
  allow: AllowList;
  /** The SDK's own limit on one operation (connecting, authorizing, sending). */
  operationTimeoutMs?: number;
}

/** The SDK's error codes by reason. */
const CODES: Record<string, FailureReason> = {
  UnauthorizedAccess: 'unauthorized',
  MessagingEntityNotFound: 'not_found',
  MessagingEntityDisabled: 'not_found',
  ServiceBusy: 'throttled',
  QuotaExceeded: 'throttled',
  MessageSizeExceeded: 'rejected',
  ServiceTimeout: 'timeout',
};

/** Service Bus asks a client answered ServerBusy to wait 10 seconds before it tries again. */
const SERVER_BUSY_WAIT_MS = 10_000;

export function serviceBusFailure(err: unknown, signal: AbortSignal): Outcome {
  if (signal.aborted) return failed('timeout', 'no answer from the namespace within the delivery timeout');
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (e?.name === 'AbortError') return failed('timeout', e.message ?? 'aborted');
  if (isServiceBusError(err)) {
    const reason = CODES[err.code];
    if (reason)
      return failed(reason, err.message, { servicebus_code: err.code }, err.code === 'ServiceBusy' ? SERVER_BUSY_WAIT_MS : undefined);
    // ServiceCommunicationProblem and GeneralError carry what the socket said in the message
    // ("ECONNREFUSED: connect ECONNREFUSED ..."), the system error code lost.
    const sys = /^(E[A-Z]+):/.exec(err.message)?.[1];
    const net = classifyNetworkError(sys ? { code: sys, message: err.message } : err);
    if (net.reason !== 'network_error') return failed(net.reason, net.message, { servicebus_code: err.code });
    return failed(err.code === 'ServiceCommunicationProblem' ? 'network_error' : 'peer_error', err.message, { servicebus_code: err.code });
  }
  const sys = /^(E[A-Z]+):/.exec(e?.message ?? '')?.[1];
  const net = classifyNetworkError(sys && !e.code?.startsWith('E') ? { code: sys, message: e.message } : err);
  if (net.reason !== 'network_error') return failed(net.reason, net.message);
  return failed('peer_error', e?.message ?? String(err));
}

/** The namespace host of a connection string (`Endpoint=sb://host[:port]/`), or null. */
export function endpointHost(connectionString: string): string | null {
  const m = /(?:^|;)\s*Endpoint\s*=\s*sb:\/\/([^/;:]+|\[[^\]]+\])/i.exec(connectionString);
  return m?.[1] ?? null;
}

/** The connection string without its EntityPath part. */
export function withoutEntityPath(connectionString: string): string {
  return connectionString
    .split(';')
    .filter((part) => !/^\s*EntityPath\s*=/i.test(part))
    .join(';');
}

export function createServiceBusSender(opts: ServiceBusSenderOptions): TypeSender {
  return {
    open(target) {
      const name = String(target.config.name ?? '');
      // The destination's `name` decides the entity: an EntityPath in the string (an entity-scoped
      // policy's) would make the SDK refuse any other name, so it is dropped; a real namespace then
      // refuses the policy's key for another entity as unauthorized.
      const connectionString = withoutEntityPath(String(target.credentials.connection_string ?? ''));
      const host = endpointHost(connectionString);
      let client: ServiceBusClient | null = null;
      let sender: ServiceBusSender | null = null;
      let broken: Outcome | null = host ? null : failed('invalid_config', 'connection_string has no Endpoint=sb://<namespace>');
      if (!broken) {
        try {
          client = new ServiceBusClient(connectionString, {
            retryOptions: { maxRetries: 0, timeoutInMs: opts.operationTimeoutMs ?? 30_000 },
          });
          sender = client.createSender(name);
        } catch (err) {
          broken = failed('invalid_config', `connection_string: ${(err as Error).message}`);
        }
      }
      const egress = hostCheck(host ?? '', opts.allow);

      return {
        async deliver({ event, deliveryMetadata, signal }) {
          if (broken || !sender) return broken ?? failed('invalid_config', 'no sender');
          const refused = await egress();
          if (refused) return refused;
          try {
            await sender.sendMessages(
              {
                body: event.data,
                contentType: 'application/json',
                messageId: event.id,
                applicationProperties: metadataOf(event, deliveryMetadata),
              },
              { abortSignal: signal },
            );
            return succeeded();
          } catch (err) {
            return serviceBusFailure(err, signal);
          }
        },
        async close() {
          await sender?.close().catch(() => {});
          await client?.close().catch(() => {});
        },
      };
    },
    async close() {},
  };
}
