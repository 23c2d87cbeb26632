/**
 * rabbitmq delivery (../shared/spec/contract-details.md, "How each type delivers"): publish to
 * `exchange` with the event topic as routing key, content type application/json, persistent, the
 * metadata map as AMQP headers, the event id as message id; done when the broker confirms it
 * (publisher confirms). `server_url` is host:port; `tls` "true" connects with amqps.
 *
 * With amqplib (maintained, weekly releases in 2026, its own types, no dependencies; errors come back
 * as the broker's reply codes, which map straight onto failure reasons). One connection and one
 * confirm channel per destination, opened on the first delivery and reused. A channel the broker
 * closes (no such exchange) is opened again on the next delivery; a lost connection is opened again,
 * and a delivery in flight when it went is published once more on the new one within its deadline,
 * so it is not lost (at least once, as every type). While the broker blocks publishers (a resource
 * alarm) a delivery fails as throttled and the connection is dropped, so nothing it held is
 * published behind the retry's back. A message the broker nacks fails as rejected.
 */
import { isIP } from 'node:net';
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { type AllowList, createEgressLookup, literalBlocked } from '../egress.ts';
import { classifyNetworkError } from '../network-errors.ts';
import { bodyOf, metadataOf } from '../metadata.ts';
import { type FailureReason, failed, type Outcome, succeeded, type TypeSender } from '../sender.ts';

export interface RabbitSenderOptions {
  allow: AllowList;
  /** Connecting (TCP, TLS and the AMQP handshake) gives up after this long. */
  connectTimeoutMs: number;
}

/** A broker's refusal: its reply code and text (a connection or channel close). */
class BrokerError extends Error {
  readonly replyCode: number;
  constructor(replyCode: number, message: string) {
    super(message);
    this.replyCode = replyCode;
  }
}

const ABORTED = Symbol('aborted');
/** How amqplib fails the confirm of a message the broker nacked. */
const NACKED = 'message nacked';

/** host:port of `server_url`, or why it is not one. */
export function parseServerUrl(s: string): { host: string; port: number } | string {
  const m = /^\[?([^\s\]/]+?)\]?:(\d{1,5})$/.exec(s.trim());
  if (!m) return `server_url must be host:port, not ${JSON.stringify(s)}`;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return `server_url has no valid port: ${s}`;
  return { host: m[1] as string, port };
}

/** The failure of an error from amqplib: the broker's reply code when it sent one, else the network's. */
export function rabbitFailure(err: unknown): Outcome {
  const e = err as { code?: unknown; message?: string } | null;
  const message = e?.message ?? String(err);
  // Handshake refusals carry the code only in the text: "Handshake terminated by server: 403 (ACCESS-REFUSED) ...".
  const code =
    err instanceof BrokerError
      ? err.replyCode
      : typeof e?.code === 'number'
        ? e.code
        : Number(/\b(\d{3}) \([A-Z_-]+\)/.exec(message)?.[1] ?? 0);
  if (code) {
    const reason: FailureReason =
      code === 403 || code === 530
        ? 'unauthorized'
        : code === 404
          ? 'not_found'
          : code === 406
            ? 'rejected'
            : code >= 500
              ? 'peer_error'
              : 'rejected';
    return failed(reason, message, { reply_code: code });
  }
  if (/ACCESS.REFUSED/i.test(message)) return failed('unauthorized', message);
  // A queue full with reject-publish, or any other refusal of this one message.
  if (message === NACKED) return failed('rejected', 'the broker nacked the message');
  const { reason, message: m } = classifyNetworkError(err);
  return failed(reason, m);
}

export function createRabbitSender(opts: RabbitSenderOptions): TypeSender {
  const lookup = createEgressLookup(opts.allow);
  return {
    open(target) {
      const exchange = String(target.config.exchange ?? '');
      const tls = target.config.tls === true || target.config.tls === 'true';
      const server = parseServerUrl(String(target.config.server_url ?? ''));
      const refused: Outcome | null =
        typeof server === 'string'
          ? failed('invalid_config', server)
          : (() => {
              const blocked = literalBlocked(server.host, opts.allow);
              return blocked ? failed('egress_blocked', blocked.message) : null;
            })();
      let conn: ChannelModel | null = null;
      let channel: Promise<ConfirmChannel> | null = null;
      let connecting: Promise<ChannelModel> | null = null;
      /** Why the channel or connection went, for the deliveries it failed. */
      let lastClose: Error | null = null;
      let blocked: string | null = null;
      let closed = false;
      const waiting = new Set<(err: Error) => void>();
      const failWaiting = (err: Error) => {
        for (const reject of waiting) reject(err);
        waiting.clear();
      };

      const connect = (): Promise<ChannelModel> => {
        if (conn) return Promise.resolve(conn);
        connecting ??= (async () => {
          const { host, port } = server as { host: string; port: number };
          const c = await amqp.connect(
            {
              protocol: tls ? 'amqps' : 'amqp',
              hostname: host,
              port,
              username: String(target.credentials.username ?? ''),
              password: String(target.credentials.password ?? ''),
              vhost: '/',
              heartbeat: 30,
            },
            {
              timeout: opts.connectTimeoutMs,
              // net/tls.connect resolve through it: the egress policy holds for the address used.
              ...(isIP(host) === 0 ? { lookup } : {}),
              ...(tls ? { servername: host } : {}),
              clientProperties: { connection_name: `switchyard ${target.id}` },
            },
          );
          if (closed) {
            await c.close().catch(() => {});
            throw new Error('client closed');
          }
          c.on('error', (err: Error) => (lastClose = err));
          c.on('close', (err?: Error) => {
            if (conn === c) {
              conn = null;
              channel = null;
            }
            const why = err ?? lastClose ?? new Error('connection closed');
            failWaiting(why);
          });
          c.on('blocked', (reason: string) => {
            blocked = reason;
            failWaiting(new BrokerError(0, `the broker blocks publishing: ${reason}`));
            // Drop the connection: what it still holds is not published behind the retry's back.
            void c.close().catch(() => {});
          });
          c.on('unblocked', () => (blocked = null));
          conn = c;
          blocked = null;
          return c;
        })().finally(() => {
          connecting = null;
        });
        return connecting;
      };

      const openChannel = (): Promise<ConfirmChannel> => {
        if (channel) return channel;
        const current: Promise<ConfirmChannel> = (async () => {
          const c = await connect();
          const ch = await c.createConfirmChannel();
          ch.on('error', (err: Error) => {
            const close = err as Error & { code?: number };
            lastClose = typeof close.code === 'number' ? new BrokerError(close.code, close.message) : err;
          });
          // Closed by the broker (no such exchange) or with the connection: the next delivery opens another.
          ch.on('close', () => {
            if (channel === current) channel = null;
          });
          return ch;
        })();
        channel = current;
        current.catch(() => {
          if (channel === current) channel = null;
        });
        return current;
      };

      /** Publishes and waits for the confirm; `sent.on` is set once the message went to a channel. */
      const publishOnce = async (
        body: Buffer,
        routingKey: string,
        headers: Record<string, string>,
        messageId: string,
        signal: AbortSignal,
        sent: { on: ChannelModel | null },
      ) => {
        const ch = await raceSignal(openChannel(), signal);
        sent.on = conn;
        await raceSignal(
          new Promise<void>((resolve, reject) => {
            const onLost = (err: Error) => reject(err);
            waiting.add(onLost);
            try {
              ch.publish(
                exchange,
                routingKey,
                body,
                { contentType: 'application/json', persistent: true, headers, messageId, timestamp: Math.floor(Date.now() / 1000) },
                (err) => {
                  waiting.delete(onLost);
                  // A nack is the broker refusing this message on a healthy channel; a channel that closed
                  // before confirming has the broker's reason when it gave one.
                  if (err) reject(err.message === NACKED || !(lastClose instanceof BrokerError) ? err : lastClose);
                  else resolve();
                },
              );
            } catch (err) {
              waiting.delete(onLost);
              reject(err);
            }
          }),
          signal,
        );
      };

      return {
        async deliver({ event, deliveryMetadata, signal }) {
          if (refused) return refused;
          const body = Buffer.from(bodyOf(event), 'utf8');
          const headers = metadataOf(event, deliveryMetadata);
          for (let attempt = 1; ; attempt++) {
            const sent: { on: ChannelModel | null } = { on: null };
            try {
              lastClose = null;
              await publishOnce(body, event.topic, headers, event.id, signal, sent);
              return succeeded();
            } catch (err) {
              if (err === ABORTED || signal.aborted) return failed('timeout', 'no confirm from the broker within the delivery timeout');
              if (err instanceof BrokerError && err.replyCode === 0) return failed('throttled', err.message);
              // The connection went between publish and confirm (not the broker refusing it): once more on a new one.
              const lost = sent.on !== null && conn !== sent.on && !(err instanceof BrokerError) && !blocked;
              if (lost && attempt === 1 && !closed) continue;
              return rabbitFailure(err);
            }
          }
        },
        async close() {
          closed = true;
          const c = conn ?? (connecting ? await connecting.catch(() => null) : null);
          conn = null;
          channel = null;
          await c?.close().catch(() => {});
        },
      };
    },
    async close() {},
  };
}

/** `p`, or ABORTED once the signal fires (the work goes on; its result is dropped). */
function raceSignal<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    p.catch(() => {});
    return Promise.reject(ABORTED);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
