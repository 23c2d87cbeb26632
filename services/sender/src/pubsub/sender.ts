/**
 * pubsub delivery (../shared/spec/contract-details.md, "How each type delivers"): one message
 * published with @google-cloud/pubsub to `projects/<project_id>/topics/<topic>`; the message data is
 * the event data as JSON text and the metadata map becomes its attributes.
 *
 * One PubSub client per destination (a gRPC channel), reused by its deliveries and closed when the
 * destination changes (clients.ts). Credentials are the service account key (checked on create),
 * signed in with a JWT client of its own, never the process's application default credentials.
 * `endpoint` points at an emulator or a private endpoint: `host:port` or `http://` connect without
 * TLS and send no credentials, as the client does for Google's emulator; `https://` uses TLS. Without
 * it the client goes to pubsub.googleapis.com (PUBSUB_EMULATOR_HOST in our environment is ignored).
 * Batching waits at most 1 ms, so a lone delivery is not held back, while deliveries to one
 * destination that overlap still share a publish request. The client does not retry (the schedule does).
 */
import { PubSub, type Topic } from '@google-cloud/pubsub';
import { reachedWithoutTls } from '@switchyard/shared/destinations/types/pubsub.ts';
import { JWT } from 'google-auth-library';
import { untilAborted } from '../abortable.ts';
import type { AllowList } from '../egress.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { hostCheck } from '../host-check.ts';
import { bodyOf, metadataOf } from '../metadata.ts';
import { type FailureReason, failed, type Outcome, succeeded, type TypeSender } from '../sender.ts';

export interface PubSubSenderOptions {
  allow: AllowList;
  /** The client's own limit on one publish request, in milliseconds. */
  requestTimeoutMs?: number;
}

const GOOGLE_ENDPOINT = 'pubsub.googleapis.com';
const SCOPES = ['https://www.googleapis.com/auth/pubsub'];

/** gRPC status codes by reason (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
const GRPC_REASONS: Record<number, FailureReason> = {
  3: 'rejected', // INVALID_ARGUMENT: this message (an attribute too long, a reserved "goog" key)
  4: 'timeout', // DEADLINE_EXCEEDED
  5: 'not_found', // NOT_FOUND: the topic
  7: 'unauthorized', // PERMISSION_DENIED
  8: 'throttled', // RESOURCE_EXHAUSTED: quota
  9: 'rejected', // FAILED_PRECONDITION
  10: 'peer_error', // ABORTED
  13: 'peer_error', // INTERNAL
  16: 'unauthorized', // UNAUTHENTICATED
};

export function pubsubFailure(err: unknown, signal: AbortSignal): Outcome {
  if (signal.aborted) return failed('timeout', 'no answer from Pub/Sub within the delivery timeout');
  const e = err as { code?: unknown; message?: string; details?: string };
  let message = e?.details || e?.message || String(err);
  let code = e?.code;
  // A call that is not retried fails as DEADLINE_EXCEEDED "Exceeded maximum number of retries
  // retrying error Error: <code> <NAME>: <details> before any response was received": the inner
  // status is the answer.
  const inner = /retrying error Error: (\d+) [A-Z_]+: (.*?)(?: before any response was received)?$/s.exec(message);
  if (code === 4 && inner?.[1]) {
    code = Number(inner[1]);
    message = inner[2] ?? message;
  }
  if (typeof code === 'number') {
    // The token for the call could not be had (before anything was sent): UNKNOWN "Getting metadata
    // from plugin failed with error: ...", Google's token endpoint's answer or the socket error.
    const token = code === 2 && message.includes('Getting metadata from plugin failed');
    // A key deleted, disabled or rotated away: the token endpoint's OAuth refusal.
    if (token && /\b(invalid_grant|invalid_client|unauthorized_client)\b/.test(message))
      return failed('unauthorized', message, { grpc_code: code });
    if (code === 14 || token) {
      // UNAVAILABLE: the channel could not connect, and its message says why ("connect ECONNREFUSED ...").
      const sys = /\b(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH)\b/.exec(message)?.[1];
      const net = sys ? classifyNetworkError({ code: sys, message }) : null;
      if (code === 14 || net)
        return failed(net && net.reason !== 'network_error' ? net.reason : 'network_error', message, { grpc_code: code });
    }
    return failed(GRPC_REASONS[code] ?? 'peer_error', message, { grpc_code: code });
  }
  const net = classifyNetworkError(err);
  return failed(net.reason === 'network_error' ? 'peer_error' : net.reason, net.message);
}

/** The endpoint as the client takes it, whether it connects without TLS, and the host to check. */
export function parseEndpoint(endpoint: unknown): { apiEndpoint: string; plaintext: boolean; host: string } {
  if (typeof endpoint !== 'string' || endpoint === '') return { apiEndpoint: GOOGLE_ENDPOINT, plaintext: false, host: GOOGLE_ENDPOINT };
  const plaintext = reachedWithoutTls(endpoint);
  const bare = endpoint.replace(/^https?:\/\//, '').replace(/\/+$/, '');
  const host = bare.startsWith('[') ? bare.slice(0, bare.indexOf(']') + 1) : (bare.split(':')[0] ?? bare);
  return { apiEndpoint: endpoint, plaintext, host };
}

export function createPubSubSender(opts: PubSubSenderOptions): TypeSender {
  return {
    open(target) {
      const projectId = String(target.config.project_id ?? '');
      const topicName = `projects/${projectId}/topics/${String(target.config.topic ?? '')}`;
      const { apiEndpoint, plaintext, host } = parseEndpoint(target.config.endpoint);
      let broken: Outcome | null = null;
      let pubsub: PubSub | null = null;
      let topic: Topic | null = null;
      try {
        let key: { client_email?: unknown; private_key?: unknown } | null = null;
        try {
          key = JSON.parse(String(target.credentials.service_account_json ?? ''));
        } catch {
          // JSON.parse's message quotes the text, and the text holds the private key: never echoed.
          throw new Error('not JSON');
        }
        if (typeof key !== 'object' || key === null) throw new Error('not a JSON object');
        // Without TLS no credentials are sent, so the placeholder key the type takes with an endpoint will do.
        const signed = !plaintext;
        if (signed && (typeof key.client_email !== 'string' || typeof key.private_key !== 'string'))
          throw new Error('no client_email or private_key');
        pubsub = new PubSub({
          projectId,
          apiEndpoint,
          emulatorMode: plaintext,
          ...(signed ? { authClient: new JWT({ email: String(key.client_email), key: String(key.private_key), scopes: SCOPES }) } : {}),
        });
        topic = pubsub.topic(topicName, {
          batching: { maxMessages: 100, maxMilliseconds: 1 },
          gaxOpts: { timeout: opts.requestTimeoutMs ?? 30_000, maxRetries: 0 },
        });
      } catch (err) {
        const why = (err as Error).message;
        broken = failed(
          'invalid_config',
          `service_account_json is not a usable service account key (${why.startsWith('not ') || why.startsWith('no ') ? why : 'unreadable'})`,
        );
      }
      const egress = hostCheck(host, opts.allow);

      return {
        async deliver({ event, deliveryMetadata, signal }) {
          if (broken || !topic) return broken ?? failed('invalid_config', 'no topic');
          if (host !== GOOGLE_ENDPOINT) {
            const refused = await egress();
            if (refused) return refused;
          }
          const publish = topic.publishMessage({ data: Buffer.from(bodyOf(event)), attributes: metadataOf(event, deliveryMetadata) });
          try {
            return succeeded({ message_id: await untilAborted(publish, signal) });
          } catch (err) {
            return pubsubFailure(err, signal);
          }
        },
        async close() {
          // Bounded: a publish still waiting on an unreachable endpoint must not hold the close.
          if (!pubsub) return;
          await Promise.race([pubsub.close().catch(() => {}), new Promise((r) => setTimeout(r, 2000).unref())]);
        },
      };
    },
    async close() {},
  };
}
