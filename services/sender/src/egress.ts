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
import { ConfigError, splitList } from '@switchyard/shared/config/index.ts';
import { Agent, buildConnector } from 'undici';
import { type Cidr, embeddedV4, formatCidr, hostBitsSet, inCidr, isPublicBytes, networkOf, parseIp } from './cidr.ts';

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
 * The configuration `load` reads (the catalogue's checks) and EGRESS_ALLOW's entries, which only
 * this parser can check: every problem of both in one ConfigError, before anything connects. Used
 * by each entry point that starts a sender (its process, embedded mode, the stack launcher).
 */
export function withEgressCheck<C>(load: () => C, env: Record<string, string | undefined>): C {
  const problems: string[] = [];
  let config: C | undefined;
  try {
    config = load();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  try {
    parseAllowList(splitList(env.EGRESS_ALLOW ?? ''));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  if (problems.length) throw new ConfigError(problems);
  return config as C;
}

/**
 * Parses egress allow-list entries: CIDRs (`10.0.0.0/8`, `fd00::/8`), single addresses (`10.1.2.3`, `::1`),
 * exact host names (case-insensitive) and `*.example.com` (any subdomain of example.com). Throws a
 * ConfigError naming EGRESS_ALLOW and every invalid entry, so a start refuses it as a bad setting.
 */
export function parseAllowList(entries: readonly string[]): AllowList {
  const list: Cidr[] = [];
  const hosts = new Set<string>();
  const suffixes: string[] = [];
  const problems: string[] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    const fail = (why: string) => problems.push(`EGRESS_ALLOW: "${raw}": ${why}`);
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
  if (problems.length) throw new ConfigError(problems);
  return { cidrs: list, hosts, suffixes };
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
