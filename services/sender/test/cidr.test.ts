// Which addresses the egress policy counts as public (services/sender/src/cidr.ts); the policy itself,
// the connector and error classification are tested in egress.test.ts.
import t from 'tap';
import { isPublicAddress } from '../src/cidr.ts';

t.test('isPublicAddress: special IPv4 ranges are not public', async (t) => {
  const cases: [string, string][] = [
    ['0.0.0.0', 'this network'],
    ['0.1.2.3', 'this network'],
    ['10.0.0.1', 'RFC 1918'],
    ['10.255.255.255', 'RFC 1918'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.0.1', 'link-local'],
    ['172.16.0.1', 'RFC 1918'],
    ['172.31.255.255', 'RFC 1918'],
    ['192.0.0.8', 'IETF protocol assignments'],
    ['192.0.2.1', 'TEST-NET-1'],
    ['192.88.99.1', '6to4 relay'],
    ['192.168.1.1', 'RFC 1918'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'TEST-NET-2'],
    ['203.0.113.9', 'TEST-NET-3'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
  ];
  for (const [ip, what] of cases) t.equal(isPublicAddress(ip), false, `${ip} (${what})`);
});

t.test('isPublicAddress: ordinary IPv4 addresses, including range neighbours, are public', async (t) => {
  for (const ip of [
    '1.1.1.1',
    '8.8.8.8',
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.1',
    '169.253.255.255',
    '169.255.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.0.3.1',
    '192.167.255.255',
    '192.169.0.1',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
  ]) {
    t.equal(isPublicAddress(ip), true, ip);
  }
});

t.test('isPublicAddress: special IPv6 ranges are not public', async (t) => {
  const cases: [string, string][] = [
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback, long form'],
    ['::', 'unspecified'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456:789a::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local with zone'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'site-local (deprecated)'],
    ['ff02::1', 'multicast'],
    ['ff0e::1', 'multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata, hex'],
    ['0:0:0:0:0:ffff:c0a8:101', 'IPv4-mapped private, long form'],
    ['::ffff:0.0.0.0', 'IPv4-mapped this-network'],
    ['64:ff9b::10.0.0.1', 'NAT64 private'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 metadata'],
    ['64:ff9b::7f00:1', 'NAT64 loopback'],
    ['64:ff9b:1::1', 'local-use NAT64'],
    ['2002:7f00:1::', '6to4 loopback'],
    ['2002:a00:1::1', '6to4 private'],
    ['2002:a9fe:a9fe::1', '6to4 metadata'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation (RFC 9637)'],
    ['2001::1', 'Teredo'],
    ['2001:2::1', 'benchmarking'],
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['100::1', 'discard-only'],
    ['4000::1', 'outside global unicast'],
  ];
  for (const [ip, what] of cases) t.equal(isPublicAddress(ip), false, `${ip} (${what})`);
});

t.test('isPublicAddress: global unicast IPv6 and embedded public IPv4 are public', async (t) => {
  for (const ip of [
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:80b::200e',
    '[2606:4700:4700::1111]',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::8.8.8.8',
    '64:ff9b::101:101',
    '2002:808:808::1',
  ]) {
    t.equal(isPublicAddress(ip), true, ip);
  }
});

t.test('isPublicAddress: anything that is not an IP address is not public', async (t) => {
  for (const s of ['', 'localhost', 'example.com', '1.2.3', '256.1.1.1', '01.2.3.4', '1.2.3.4/32', '::g', '1::2::3', ' 8.8.8.8']) {
    t.equal(isPublicAddress(s), false, JSON.stringify(s));
  }
});
