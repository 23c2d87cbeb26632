/**
 * An Azure Service Bus protocol peer for tests, on rhea (AMQP 1.0). There is no Service Bus emulator
 * reachable here, so this speaks the part of the protocol a sender uses, and `@azure/service-bus`
 * talks to it unchanged: only the connection string points here, with the SDK's documented
 * `UseDevelopmentEmulator=true` (plain AMQP on the given port instead of AMQPS on 5671).
 *
 * What it covers, as a real namespace does it:
 * - SASL ANONYMOUS then AMQP open/begin, as the SDK does for SAS keys;
 * - claims-based security: a `put-token` request on the `$cbs` node, answered on the client's reply
 *   link with status 202, or 401 when the token's HMAC-SHA256 signature does not match the
 *   namespace's key for that key name, or when it has expired (the SDK then fails the send with
 *   UnauthorizedError);
 * - attaching a sender link to a queue or topic by name: an unknown name is refused with
 *   `amqp:not-found` (the SDK's MessagingEntityNotFoundError), and a link attached before a valid
 *   token for that entity is refused with `amqp:unauthorized-access`;
 * - ServerBusy (`com.microsoft:server-busy`) for the entities in `busy`, as a throttled namespace answers;
 * - credit, transfers of single messages and settlement with `accepted`; every message received is
 *   kept (body bytes, content type, message id, application properties). A batch (format
 *   0x80013700, several encoded messages) is rejected: rhea cannot decode it, and the sender sends
 *   one message per delivery.
 *
 * What only a real namespace covers: TLS and the real DNS name, token audiences scoped narrower
 * than the namespace, Send rights of a policy (any valid key may send here), quotas, sizes and
 * throttling (ServerBusy), sessions and partitioned entities, topic subscriptions and filters,
 * dead-lettering, and the `$management` node (the sender does not use it).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import rhea from 'rhea';

export interface ReceivedMessage {
  entity: string;
  /** The data section's bytes (the SDK's JSON encoding of the body), else the AMQP value. */
  body: unknown;
  content_type?: string;
  message_id?: unknown;
  application_properties: Record<string, unknown>;
}

export interface ServiceBusPeer {
  port: number;
  /** A connection string for `@azure/service-bus` (or a destination's credentials). */
  connectionString(opts?: { keyName?: string; key?: string }): string;
  received: ReceivedMessage[];
  /** Key names and keys of the namespace; change one to rotate it (new put-tokens are checked against it). */
  keys: Record<string, string>;
  /** Entities answering every send with ServerBusy (`com.microsoft:server-busy`). */
  busy: Set<string>;
  /** Resolves with the messages for `entity` once there are at least `n`. */
  waitFor(entity: string, n: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  close(): Promise<void>;
}

const BATCH_FORMAT = 0x80013700;

export async function startServiceBusPeer(opts: { entities: string[]; keys?: Record<string, string> }): Promise<ServiceBusPeer> {
  const keys = { ...(opts.keys ?? { RootManageSharedAccessKey: 'dGVzdC1rZXk=' }) };
  const busy = new Set<string>();
  const entities = new Set(opts.entities);
  const received: ReceivedMessage[] = [];
  const waiters = new Set<() => void>();
  const container = rhea.create_container({ id: 'servicebus-peer' });
  container.sasl_server_mechanisms.enable_anonymous();
  // Per connection: the audiences it holds a valid token for, and its reply links by address.
  const authorized = new WeakMap<object, Set<string>>();
  const replyLinks = new WeakMap<object, Map<string, rhea.Sender>>();

  const checkToken = (token: string): string | null => {
    const params = new URLSearchParams(token.replace(/^SharedAccessSignature /, ''));
    const sr = params.get('sr');
    const sig = params.get('sig');
    const se = params.get('se');
    const skn = params.get('skn');
    if (!sr || !sig || !se || !skn) return 'malformed token';
    const key = keys[skn];
    if (key === undefined) return `unknown key name ${skn}`;
    if (Number(se) * 1000 < Date.now()) return 'token expired';
    // The SDK signs "<url-encoded resource>\n<expiry>" with the key text as given (not base64-decoded).
    const expected = createHmac('sha256', key)
      .update(`${encodeURIComponent(sr)}\n${se}`)
      .digest();
    const got = Buffer.from(sig, 'base64');
    if (got.length !== expected.length || !timingSafeEqual(got, expected)) return 'invalid signature';
    return null;
  };

  const entityOf = (address: string) => {
    // Targets are the entity path, or the full sb:// URL of it.
    const m = /^(?:sb|amqps?):\/\/[^/]+\/(.*)$/.exec(address);
    return (m?.[1] ?? address).replace(/\/$/, '');
  };

  container.on('sender_open', (ctx: rhea.EventContext) => {
    // The client's receiver link: our sender. `$cbs` replies go to its source address.
    const link = ctx.sender as rhea.Sender;
    const address = (link.source as { address?: string } | undefined)?.address ?? '';
    const m = replyLinks.get(ctx.connection) ?? new Map<string, rhea.Sender>();
    replyLinks.set(ctx.connection, m);
    m.set(address, link);
    m.set(link.name, link);
  });

  container.on('receiver_open', (ctx: rhea.EventContext) => {
    const link = ctx.receiver as rhea.Receiver;
    const target = (link.target as { address?: string } | undefined)?.address ?? '';
    if (target === '$cbs') return;
    const entity = entityOf(target);
    if (!entities.has(entity)) {
      link.close({ condition: 'amqp:not-found', description: `The messaging entity '${entity}' could not be found.` });
      return;
    }
    const held = authorized.get(ctx.connection);
    if (!held || ![...held].some((aud) => entityOf(aud) === entity || entityOf(aud) === '')) {
      link.close({ condition: 'amqp:unauthorized-access', description: `Unauthorized access to '${entity}'.` });
    }
  });

  container.on('message', (ctx: rhea.EventContext) => {
    const link = ctx.receiver as rhea.Receiver;
    const target = (link.target as { address?: string } | undefined)?.address ?? '';
    const msg = ctx.message as rhea.Message;
    if (target === '$cbs') {
      const props = (msg.application_properties ?? {}) as Record<string, unknown>;
      const audience = String(props.name ?? '');
      const problem = props.operation === 'put-token' ? checkToken(String(msg.body)) : 'unsupported operation';
      if (!problem) {
        const held = authorized.get(ctx.connection) ?? new Set<string>();
        authorized.set(ctx.connection, held);
        held.add(audience);
      }
      const reply = replyLinks.get(ctx.connection)?.get(String(msg.reply_to ?? ''));
      reply?.send({
        correlation_id: msg.message_id,
        to: msg.reply_to,
        body: null,
        application_properties: problem
          ? { 'status-code': 401, 'status-description': problem }
          : { 'status-code': 202, 'status-description': 'Accepted' },
      });
      ctx.delivery?.accept();
      return;
    }
    const entity = entityOf(target);
    if (busy.has(entity)) {
      ctx.delivery?.reject({ condition: 'com.microsoft:server-busy', description: `The server is busy; try '${entity}' again in 10 s.` });
      return;
    }
    if (ctx.delivery?.format === BATCH_FORMAT) {
      // rhea cannot decode a batch's several data sections; the sender sends one message per delivery.
      ctx.delivery.reject({ condition: 'amqp:not-implemented', description: 'batches are not supported by this test peer' });
      return;
    }
    // The SDK sends a JSON body as one data section (typecode 117): kept as the bytes sent.
    const section = msg.body as { typecode?: number; content?: Buffer } | undefined;
    received.push({
      entity,
      body: section?.typecode === 117 ? section.content : msg.body,
      ...(msg.content_type !== undefined ? { content_type: String(msg.content_type) } : {}),
      message_id: msg.message_id,
      application_properties: { ...((msg.application_properties ?? {}) as Record<string, unknown>) },
    });
    ctx.delivery?.accept();
    for (const w of waiters) w();
  });

  const server = container.listen({ port: 0, host: '127.0.0.1' });
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    received,
    keys,
    busy,
    connectionString({ keyName, key } = {}) {
      const name = keyName ?? Object.keys(keys)[0];
      return `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=${name};SharedAccessKey=${key ?? keys[name as string]};UseDevelopmentEmulator=true`;
    },
    waitFor(entity, n, timeoutMs = 10_000) {
      const have = () => received.filter((m) => m.entity === entity);
      return new Promise((resolve, reject) => {
        const check = () => {
          const got = have();
          if (got.length >= n) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(got);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`servicebus peer: ${have().length} of ${n} messages for ${entity} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Open client connections keep a server from closing.
        for (const s of sockets) s.destroy();
      }),
  };
}
