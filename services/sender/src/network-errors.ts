/**
 * What went wrong with a connection, as an attempt records it: a reason from a small fixed set and one
 * line of message, from the error the network stack raised (any depth of causes). Every sender type
 * classifies its client's errors here.
 */
import { EGRESS_BLOCKED } from './egress.ts';

export type NetworkErrorReason =
  | 'timeout'
  | 'connection_refused'
  | 'connection_reset'
  | 'dns_error'
  | 'tls_error'
  | 'egress_blocked'
  | 'network_error';

interface ErrorLike {
  code?: unknown;
  name?: unknown;
  type?: unknown;
  message?: unknown;
  syscall?: unknown;
  cause?: unknown;
  errors?: unknown;
  originalError?: unknown;
}

/**
 * The error and everything it wraps (`cause`, AggregateError `errors`, kafkajs's `originalError` of
 * its retry and non-retriable wrappers), outermost first.
 */
export function errorChain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length && out.length < 32) {
    const e = queue.shift();
    if (e === null || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const el = e as ErrorLike;
    out.push(el);
    if (el.cause !== undefined) queue.push(el.cause);
    if (el.originalError !== undefined) queue.push(el.originalError);
    if (Array.isArray(el.errors)) queue.push(...el.errors);
  }
  return out;
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_ABORTED',
  'UND_ERR_ABORT',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'ABORT_ERR',
]);
const DNS_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NONAME',
  'EAI_NODATA',
  'EAI_ADDRFAMILY',
  'EAI_SERVICE',
  'ENODATA',
  'ESERVFAIL',
  'ENONAME',
  'EBADNAME',
  'ETIMEOUT',
]);
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_CLOSED']);
const TLS_CODES = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'HOSTNAME_MISMATCH', 'EPROTO', 'UND_ERR_PRX_TLS']);

function specificReason(e: ErrorLike): NetworkErrorReason | null {
  const code = typeof e.code === 'string' ? e.code : '';
  const name = typeof e.name === 'string' ? e.name : '';
  if (code === EGRESS_BLOCKED) return 'egress_blocked';
  if (TIMEOUT_CODES.has(code)) return 'timeout';
  // Before the name: the AWS SDK names a reset connection a TimeoutError.
  if (RESET_CODES.has(code)) return 'connection_reset';
  if (name === 'TimeoutError' || name === 'AbortError') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (DNS_CODES.has(code) || e.syscall === 'getaddrinfo') return 'dns_error';
  if (
    TLS_CODES.has(code) ||
    code.startsWith('ERR_TLS_') ||
    code.startsWith('ERR_SSL_') ||
    code.startsWith('ERR_OSSL_') ||
    code.startsWith('CERT_') ||
    code.startsWith('UNABLE_TO_')
  ) {
    return 'tls_error';
  }
  return null;
}

/** OpenSSL's `<thread>:error:<hex>:<library>:<function>:<reason>:<source file>:<line>:` message format. */
const OPENSSL_MESSAGE = /^[0-9A-F]+:error:[0-9A-F]+:([^:]*):[^:]*:([^:]*):/;

/** One line of an error's message: never the stack (nor OpenSSL's source location), bounded in length. */
function oneLine(e: ErrorLike): string {
  let m = typeof e.message === 'string' ? (e.message.split('\n')[0] ?? '').trim() : '';
  const ssl = OPENSSL_MESSAGE.exec(m);
  if (ssl) m = `${ssl[1] ?? 'TLS'}: ${ssl[2] ?? 'handshake failed'}${typeof e.code === 'string' && e.code ? ` (${e.code})` : ''}`;
  return m.length > 300 ? `${m.slice(0, 300)}…` : m;
}

function messageOf(chain: readonly ErrorLike[], start: ErrorLike): string {
  const from = chain.indexOf(start);
  for (const e of [start, ...chain.slice(from + 1), ...chain]) {
    const m = oneLine(e);
    if (m) return m;
  }
  for (const e of chain) if (typeof e.code === 'string' && e.code) return e.code;
  return 'network error';
}

/**
 * Maps an undici/node network failure to a delivery failure reason and a short message fit for an attempt
 * record (one line of the relevant error's message, no stack). EGRESS_BLOCKED anywhere in the chain wins;
 * otherwise the outermost error with a recognised code decides; an undici socket error ("other side closed")
 * counts as a reset when nothing more specific is found.
 */
export function classifyNetworkError(err: unknown): { reason: NetworkErrorReason; message: string } {
  const chain = errorChain(err);
  if (chain.length === 0) {
    const text = typeof err === 'string' ? (err.split('\n')[0] ?? '').trim().slice(0, 300) : '';
    return { reason: 'network_error', message: text || 'network error' };
  }
  const blocked = chain.find((e) => e.code === EGRESS_BLOCKED);
  if (blocked) return { reason: 'egress_blocked', message: messageOf(chain, blocked) };
  for (const e of chain) {
    const reason = specificReason(e);
    if (reason) return { reason, message: messageOf(chain, e) };
  }
  const socket = chain.find((e) => e.code === 'UND_ERR_SOCKET');
  if (socket) return { reason: 'connection_reset', message: messageOf(chain, socket) };
  const first = chain[0] as ErrorLike;
  return { reason: 'network_error', message: messageOf(chain, first) };
}
