/**
 * CIDR maths for the egress policy (egress.ts): parsing IPv4 and IPv6 addresses and ranges, range
 * membership, and which addresses are public (not loopback, private, link-local, shared, multicast,
 * reserved or documentation; an IPv4-mapped, NAT64 or 6to4 address is judged by the IPv4 it embeds).
 */
import { isIP } from 'node:net';

/** A network range: the address bytes (4 or 16) and the prefix length. */
export interface Cidr {
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

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
export function parseIp(ip: string): Uint8Array | null {
  const s = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = isIP(s);
  if (family === 4) return parseV4(s);
  if (family === 6) return parseV6(s);
  return null;
}

export function inCidr(addr: Uint8Array, c: Cidr): boolean {
  if (addr.length !== c.bytes.length) return false;
  const full = c.prefix >> 3;
  for (let i = 0; i < full; i++) if (addr[i] !== c.bytes[i]) return false;
  const rest = c.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((addr[full] ?? 0) & mask) === ((c.bytes[full] ?? 0) & mask);
}

export function hostBitsSet(c: Cidr): boolean {
  for (let bit = c.prefix; bit < c.bytes.length * 8; bit++) {
    if (((c.bytes[bit >> 3] ?? 0) >> (7 - (bit & 7))) & 1) return true;
  }
  return false;
}

/** Parses `a.b.c.d/n` or `v6/n` (throws on anything else); used for the built-in tables and allow-list entries. */
export function parseCidr(s: string): Cidr {
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
export function embeddedV4(addr: Uint8Array): Uint8Array | null {
  if (addr.length !== 16) return null;
  if (inCidr(addr, V6_MAPPED) || inCidr(addr, V6_NAT64)) return addr.slice(12, 16);
  if (inCidr(addr, V6_6TO4)) return addr.slice(2, 6);
  return null;
}

export function isPublicBytes(addr: Uint8Array): boolean {
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

export function networkOf(c: Cidr): Cidr {
  const bytes = c.bytes.slice();
  for (let bit = c.prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3] = (bytes[bit >> 3] ?? 0) & ~(1 << (7 - (bit & 7)));
  return { bytes, prefix: c.prefix };
}

export function formatCidr(c: Cidr): string {
  if (c.bytes.length === 4) return `${Array.from(c.bytes).join('.')}/${c.prefix}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((c.bytes[i] ?? 0) << 8) | (c.bytes[i + 1] ?? 0)).toString(16));
  return `${groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}/${c.prefix}`;
}
