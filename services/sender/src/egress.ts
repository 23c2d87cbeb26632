/**
 * Egress policy of deliveries (every type: webhook and gateway through the undici agent, the SDK and AMQP
 * clients through `createEgressLookup` and `literalBlocked`): by default a delivery reaches public addresses only, never loopback,
 * private, link-local (cloud metadata), shared, multicast, reserved or documentation ranges. EGRESS_ALLOW lists
 * the exceptions (CIDRs, exact hosts, `*.suffix` hosts).
 *
 * The policy is enforced on the address the socket connects to, not on the URL: the agent's connector resolves
 * host names itself (a custom `lookup` handed to net/tls.connect) and passes on only permitted addresses, so a
 * DNS answer that changes between a check and the connection (DNS rebinding) cannot slip through. net.connect
 * never calls `lookup` for an IP literal host, so the connector also checks literal hosts before any socket is
 * created.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';

/** A network range: the address bytes (4 or 16) and the prefix length. */
export interface Cidr {
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** Exceptions to the public-only rule, built by parseAllowList. */
export interface AllowList {
  readonly cidrs: readonly Cidr[];
  /** Exact host names, lower case, without a trailing dot. */
  readonly hosts: ReadonlySet<string>;
  /** Suffixes of `*.example.com` entries, as `.example.com`: they match subdomains, not the bare domain. */
  readonly suffixes: readonly string[];
}

export const EGRESS_BLOCKED = 'EGRESS_BLOCKED';

/** Thrown (passed to the connect callback) when a connection would reach a non-public, non-allowed address. */
export class EgressBlockedError extends Error {
  readonly code = EGRESS_BLOCKED;
  readonly host: string;
  readonly addresses: readonly string[];
  constructor(host: string, addresses: readonly string[]) {
    const literal = addresses.length === 1 && addresses[0] === host;
    super(
      literal
        ? `egress blocked: ${host} is not a public address`
        : `egress blocked: ${host} resolves only to non-public addresses (${addresses.join(', ')})`,
    );
    this.name = 'EgressBlockedError';
    this.host = host;
    this.addresses = addresses;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Addresses

function parseV4(s: string): Uint8Array | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i] ?? '';
    if (!/^(0|[1-9]\d{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
}

function parseV6(input: string): Uint8Array | null {
  let s = input;
  const zone = s.indexOf('%');
  if (zone !== -1) s = s.slice(0, zone);
  if (s.includes('.')) {
    // Trailing dotted IPv4 (::ffff:1.2.3.4): rewrite it as two hex groups.
    const idx = s.lastIndexOf(':');
    const v4 = idx === -1 ? null : parseV4(s.slice(idx + 1));
    if (!v4) return null;
    const hi = (((v4[0] ?? 0) << 8) | (v4[1] ?? 0)).toString(16);
    const lo = (((v4[2] ?? 0) << 8) | (v4[3] ?? 0)).toString(16);
    s = `${s.slice(0, idx + 1)}${hi}:${lo}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  if (halves.length === 1 ? head.length !== 8 : head.length + tail.length > 7) return null;
  const groups = [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    const g = groups[i] ?? '';
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
    const n = Number.parseInt(g, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  }
  return out;
}

/** The bytes of an IPv4 (4) or IPv6 (16) address; brackets and an IPv6 zone are ignored. null if not an address. */
function parseIp(ip: string): Uint8Array | null {
  const s = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = isIP(s);
  if (family === 4) return parseV4(s);
  if (family === 6) return parseV6(s);
  return null;
}

function inCidr(addr: Uint8Array, c: Cidr): boolean {
  if (addr.length !== c.bytes.length) return false;
  const full = c.prefix >> 3;
  for (let i = 0; i < full; i++) if (addr[i] !== c.bytes[i]) return false;
  const rest = c.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((addr[full] ?? 0) & mask) === ((c.bytes[full] ?? 0) & mask);
}

function hostBitsSet(c: Cidr): boolean {
  for (let bit = c.prefix; bit < c.bytes.length * 8; bit++) {
    if (((c.bytes[bit >> 3] ?? 0) >> (7 - (bit & 7))) & 1) return true;
  }
  return false;
}

/** Parses `a.b.c.d/n` or `v6/n` (throws on anything else); used for the built-in tables and allow-list entries. */
function parseCidr(s: string): Cidr {
  const slash = s.indexOf('/');
  const addr = parseIp(s.slice(0, slash));
  const p = s.slice(slash + 1);
  if (!addr || !/^\d{1,3}$/.test(p) || Number(p) > addr.length * 8) throw new Error(`bad CIDR ${s}`);
  return { bytes: addr, prefix: Number(p) };
}

const cidrs = (list: readonly string[]): readonly Cidr[] => list.map(parseCidr);

/** IPv4 ranges that are never public (IANA special-purpose registry, plus multicast, reserved and broadcast). */
const V4_NOT_PUBLIC = cidrs([
  '0.0.0.0/8', // "this network"; 0.0.0.0 reaches the local host on Linux
  '10.0.0.0/8', // RFC 1918
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, cloud metadata 169.254.169.254
  '172.16.0.0/12', // RFC 1918
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // TEST-NET-1
  '192.88.99.0/24', // 6to4 relay anycast (deprecated)
  '192.168.0.0/16', // RFC 1918
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // TEST-NET-2
  '203.0.113.0/24', // TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, including broadcast 255.255.255.255
]);

/** Only global unicast (2000::/3) can be public; loopback, ::, fc00::/7, fe80::/10, ff00::/8 … all lie outside. */
const V6_GLOBAL_UNICAST = parseCidr('2000::/3');
/** Non-public ranges inside 2000::/3. */
const V6_NOT_PUBLIC = cidrs([
  '2001::/23', // IETF protocol assignments, including Teredo 2001::/32
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation (RFC 9637)
]);
const V6_MAPPED = parseCidr('::ffff:0:0/96');
const V6_NAT64 = parseCidr('64:ff9b::/96');
const V6_6TO4 = parseCidr('2002::/16');

/** The IPv4 address an IPv6 address stands for: IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4 (2002::/16). */
function embeddedV4(addr: Uint8Array): Uint8Array | null {
  if (addr.length !== 16) return null;
  if (inCidr(addr, V6_MAPPED) || inCidr(addr, V6_NAT64)) return addr.slice(12, 16);
  if (inCidr(addr, V6_6TO4)) return addr.slice(2, 6);
  return null;
}

function isPublicBytes(addr: Uint8Array): boolean {
  if (addr.length === 4) return !V4_NOT_PUBLIC.some((c) => inCidr(addr, c));
  const v4 = embeddedV4(addr);
  if (v4) return isPublicBytes(v4);
  return inCidr(addr, V6_GLOBAL_UNICAST) && !V6_NOT_PUBLIC.some((c) => inCidr(addr, c));
}

/** True when `ip` is a globally routable unicast address; false for special ranges and for anything not an IP. */
export function isPublicAddress(ip: string): boolean {
  const addr = parseIp(ip);
  return addr !== null && isPublicBytes(addr);
}

// ---------------------------------------------------------------------------------------------------------------
// Allow list

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

function normalizeHost(host: string): string {
  const h = host.toLowerCase();
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/** Why `host` is not a valid host name, or null when it is. */
function hostProblem(host: string): string | null {
  if (host === '') return 'empty host name';
  if (host.length > 253) return 'host name longer than 253 characters';
  if (host.includes('*')) return 'a wildcard is only allowed as a leading "*." label';
  if (host.includes(':')) return 'ports and schemes are not supported, give a host name or a CIDR';
  if (host.includes('/')) return 'not a valid CIDR or host name';
  const labels = host.split('.');
  const bad = labels.find((l) => !LABEL.test(l));
  if (bad !== undefined) return bad === '' ? 'empty label in host name' : `invalid host name label "${bad}"`;
  if (/^\d+$/.test(labels[labels.length - 1] ?? '')) return 'looks like an IP address but is not a valid one';
  return null;
}

/**
 * Parses egress allow-list entries: CIDRs (`10.0.0.0/8`, `fd00::/8`), single addresses (`10.1.2.3`, `::1`),
 * exact host names (case-insensitive) and `*.example.com` (any subdomain of example.com). Throws one error
 * naming every invalid entry.
 */
export function parseAllowList(entries: readonly string[]): AllowList {
  const list: Cidr[] = [];
  const hosts = new Set<string>();
  const suffixes: string[] = [];
  const problems: string[] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    const fail = (why: string) => problems.push(`"${raw}": ${why}`);
    if (entry === '') {
      fail('empty entry');
    } else if (entry.includes('/')) {
      const slash = entry.indexOf('/');
      const addrText = entry.slice(0, slash);
      const prefixText = entry.slice(slash + 1);
      const addr = parseIp(addrText);
      if (!addr) {
        fail(`"${addrText}" is not an IPv4 or IPv6 address`);
        continue;
      }
      const max = addr.length * 8;
      if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) {
        fail(`prefix length must be an integer from 0 to ${max}`);
        continue;
      }
      const c: Cidr = { bytes: addr, prefix: Number(prefixText) };
      if (hostBitsSet(c)) {
        fail(`address has bits set beyond the /${c.prefix} prefix; did you mean ${formatCidr(networkOf(c))}?`);
        continue;
      }
      list.push(c);
    } else if (isIP(entry) !== 0) {
      const addr = parseIp(entry);
      if (addr) list.push({ bytes: addr, prefix: addr.length * 8 });
      else fail('not a valid IP address');
    } else if (entry.startsWith('*.')) {
      const rest = normalizeHost(entry.slice(2));
      const why = hostProblem(rest);
      if (why) fail(why);
      else suffixes.push(`.${rest}`);
    } else {
      const host = normalizeHost(entry);
      const why = hostProblem(host);
      if (why) fail(why);
      else hosts.add(host);
    }
  }
  if (problems.length) throw new Error(`invalid egress allow-list entr${problems.length === 1 ? 'y' : 'ies'}: ${problems.join('; ')}`);
  return { cidrs: list, hosts, suffixes };
}

function networkOf(c: Cidr): Cidr {
  const bytes = c.bytes.slice();
  for (let bit = c.prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3] = (bytes[bit >> 3] ?? 0) & ~(1 << (7 - (bit & 7)));
  return { bytes, prefix: c.prefix };
}

function formatCidr(c: Cidr): string {
  if (c.bytes.length === 4) return `${Array.from(c.bytes).join('.')}/${c.prefix}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((c.bytes[i] ?? 0) << 8) | (c.bytes[i + 1] ?? 0)).toString(16));
  return `${groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}/${c.prefix}`;
}

function hostAllowed(host: string, allow: AllowList): boolean {
  const h = normalizeHost(host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
  if (h === '') return false;
  return allow.hosts.has(h) || allow.suffixes.some((s) => h.length > s.length && h.endsWith(s));
}

/**
 * Whether a connection to `ip`, reached through host name `host` (the IP itself for literal URLs), is permitted:
 * public addresses always are; others when the host is listed or the address (or the IPv4 address an IPv4-mapped,
 * NAT64 or 6to4 address embeds) lies in a listed range.
 */
export function isAllowed(ip: string, host: string, allow: AllowList): boolean {
  const addr = parseIp(ip);
  if (!addr) return false;
  if (isPublicBytes(addr)) return true;
  if (hostAllowed(host, allow)) return true;
  const v4 = embeddedV4(addr);
  return allow.cidrs.some((c) => inCidr(addr, c) || (v4 !== null && inCidr(v4, c)));
}

// ---------------------------------------------------------------------------------------------------------------
// Connecting

/** Resolves every address of a host name, as dns.lookup with `all: true`. */
export type Resolver = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A `lookup` for net/tls.connect: resolves (node:dns lookup unless `resolve` is given, for tests), drops the
 * addresses the policy refuses and fails with EGRESS_BLOCKED when none is left. The socket connects to what this
 * returns, and each connection resolves anew, so the check covers the address actually used.
 */
export function createEgressLookup(allow: AllowList, resolve: Resolver = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, '');
        return;
      }
      const permitted = addresses.filter((a) => isAllowed(a.address, hostname, allow));
      const first = permitted[0];
      if (!first) {
        callback(
          new EgressBlockedError(
            hostname,
            addresses.map((a) => a.address),
          ),
          '',
        );
        return;
      }
      if (options.all) callback(null, permitted);
      else callback(null, first.address, first.family);
    });
  };
}

/**
 * The refusal of an IP literal host the policy does not allow, else null. net.connect never calls `lookup` for
 * a literal, so every client checks literal hosts itself before it connects. Brackets of IPv6 literals are ignored.
 */
export function literalBlocked(host: string, allow: AllowList): EgressBlockedError | null {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return isIP(h) !== 0 && !isAllowed(h, h, allow) ? new EgressBlockedError(h, [h]) : null;
}

export interface EgressAgentOptions {
  allow: AllowList;
  /** Connections per origin (default 64). */
  connections?: number;
  /** Idle time before a kept-alive connection is closed (default 4000 ms, undici's default). */
  keepAliveTimeoutMs?: number;
  /** Time to resolve and connect, TLS included (default 10000 ms). */
  connectTimeoutMs?: number;
  /** Requests in flight on one connection (default 1: no pipelining). */
  pipelining?: number;
}

/** A pooled keep-alive undici Agent whose every connection passes the egress policy. */
export function createEgressAgent(opts: EgressAgentOptions): Agent {
  const { allow } = opts;
  const base = buildConnector({ timeout: opts.connectTimeoutMs ?? 10_000, lookup: createEgressLookup(allow) });
  const connect: buildConnector.connector = (options, callback) => {
    // undici strips the brackets of IPv6 literals; net.connect skips `lookup` for any IP literal, so check here.
    const err = literalBlocked(options.hostname, allow);
    if (err) {
      process.nextTick(() => callback(err, null));
      return;
    }
    base(options, callback);
  };
  return new Agent({
    connections: opts.connections ?? 64,
    keepAliveTimeout: opts.keepAliveTimeoutMs ?? 4_000,
    pipelining: opts.pipelining ?? 1,
    connect,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Errors

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
  message?: unknown;
  syscall?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/** The error and everything it wraps (`cause`, AggregateError `errors`), outermost first. */
function errorChain(err: unknown): ErrorLike[] {
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
  if (TIMEOUT_CODES.has(code) || name === 'TimeoutError' || name === 'AbortError') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (RESET_CODES.has(code)) return 'connection_reset';
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
