// Egress policy of webhook deliveries. Network traffic stays on loopback: every net.connect and tls.connect of this
// process goes through a guard that refuses any host other than 127.0.0.1/localhost/::1, so even a broken policy cannot reach
// 10.0.0.1 or 169.254.169.254 — it would fail the assertions instead.
import type { LookupAddress, LookupOptions } from 'node:dns';
import http from 'node:http';
import net, { type LookupFunction } from 'node:net';
import tls from 'node:tls';
import t from 'tap';
import { Agent, request } from 'undici';
import { freePort, listenLocal, type Teardown } from '@switchyard/shared/testing/index.ts';
import { createEgressAgent, createEgressLookup, EgressBlockedError, isAllowed, parseAllowList, type Resolver } from '../src/egress.ts';
import { hostCheck } from '../src/host-check.ts';
import { classifyNetworkError } from '../src/network-errors.ts';

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/** Hosts net.connect or tls.connect was asked for, in order (undici's connector calls them). */
const connectAttempts: string[] = [];
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1']);

/** Wraps a connect function so that only loopback hosts are ever dialled; anything else gets a socket that fails. */
function guard<F extends (...args: never[]) => net.Socket>(original: F, owner: object): F {
  return ((...args: unknown[]) => {
    const first = args[0];
    const host = first && typeof first === 'object' ? String((first as { host?: unknown }).host ?? 'localhost') : 'localhost';
    connectAttempts.push(host);
    if (!LOOPBACK_HOSTS.has(host)) {
      const s = new net.Socket();
      process.nextTick(() => s.destroy(Object.assign(new Error(`test guard: refused to connect to ${host}`), { code: 'TEST_GUARD' })));
      return s;
    }
    return (original as unknown as (...a: unknown[]) => net.Socket).apply(owner, args);
  }) as unknown as F;
}
const originalNetConnect = net.connect;
const originalTlsConnect = tls.connect;
net.connect = guard(originalNetConnect, net);
tls.connect = guard(originalTlsConnect, tls);
t.teardown(() => {
  net.connect = originalNetConnect;
  tls.connect = originalTlsConnect;
});

interface TestServer {
  port: number;
  /** TCP connections the server accepted. */
  connections(): number;
}

async function serve(t: Teardown, handler: http.RequestListener): Promise<TestServer> {
  const server = http.createServer(handler);
  let accepted = 0;
  server.on('connection', () => {
    accepted++;
  });
  return { port: (await listenLocal(t, server)).port, connections: () => accepted };
}

const ok: http.RequestListener = (_req, res) => {
  res.end('ok');
};

function agent(t: Teardown, allow: readonly string[], extra: { connections?: number } = {}): Agent {
  const a = createEgressAgent({ allow: parseAllowList(allow), connectTimeoutMs: 500, ...extra });
  t.teardown(() => a.destroy());
  return a;
}

/** A request with short timeouts, so a bug fails fast instead of hanging. */
async function get(url: string, dispatcher: Agent, opts: { headersTimeout?: number } = {}): Promise<{ status: number; body: string }> {
  const res = await request(url, {
    dispatcher,
    signal: AbortSignal.timeout(2000),
    headersTimeout: opts.headersTimeout ?? 1000,
    bodyTimeout: 1000,
  });
  return { status: res.statusCode, body: await res.body.text() };
}

async function failure(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected the request to fail');
}

// ---------------------------------------------------------------------------------------------------------------
// Allow list

t.test('parseAllowList: CIDRs, single addresses, hosts and wildcards', async (t) => {
  const allow = parseAllowList([
    '127.0.0.0/8',
    '::1/128',
    '10.1.2.3',
    'fd00::/8',
    'Hooks.Example.COM',
    '*.internal.example',
    ' docker.local. ',
  ]);
  t.equal(allow.cidrs.length, 4);
  t.same([...allow.hosts].sort(), ['docker.local', 'hooks.example.com']);
  t.same(allow.suffixes, ['.internal.example']);
  t.same(parseAllowList([]), { cidrs: [], hosts: new Set(), suffixes: [] });

  // CIDRs
  t.ok(isAllowed('127.0.0.1', '127.0.0.1', allow));
  t.ok(isAllowed('127.200.0.9', 'x', allow));
  t.ok(isAllowed('::1', '::1', allow));
  t.ok(isAllowed('10.1.2.3', 'x', allow), 'a single address is a /32');
  t.notOk(isAllowed('10.1.2.4', 'x', allow));
  t.ok(isAllowed('fd12::1', 'x', allow));
  t.notOk(isAllowed('fc00::1', 'x', allow));
  t.ok(isAllowed('::ffff:127.0.0.1', 'x', allow), 'IPv4-mapped is judged by its IPv4 address');
  t.notOk(isAllowed('169.254.169.254', 'x', allow));
  t.notOk(isAllowed('0.0.0.0', 'x', allow), '0.0.0.0 is not loopback');

  // hosts: exact (any case, trailing dot) and wildcard (subdomains only)
  t.ok(isAllowed('10.9.9.9', 'hooks.example.com', allow));
  t.ok(isAllowed('10.9.9.9', 'HOOKS.example.com.', allow));
  t.notOk(isAllowed('10.9.9.9', 'a.hooks.example.com', allow), 'exact host does not cover subdomains');
  t.ok(isAllowed('172.17.0.1', 'docker.local', allow));
  t.ok(isAllowed('10.9.9.9', 'a.internal.example', allow));
  t.ok(isAllowed('10.9.9.9', 'a.b.Internal.Example', allow));
  t.notOk(isAllowed('10.9.9.9', 'internal.example', allow), 'the wildcard does not cover the bare domain');
  t.notOk(isAllowed('10.9.9.9', 'xinternal.example', allow));
  t.notOk(isAllowed('not-an-ip', 'hooks.example.com', allow), 'an invalid address is never allowed');

  // public addresses need no entry
  const empty = parseAllowList([]);
  t.ok(isAllowed('8.8.8.8', 'dns.google', empty));
  t.ok(isAllowed('2606:4700:4700::1111', 'x', empty));
  t.notOk(isAllowed('127.0.0.1', 'localhost', empty));
  t.notOk(isAllowed('::1', 'localhost', empty));
});

t.test('parseAllowList: prefix lengths are honoured bit by bit', async (t) => {
  const allow = parseAllowList(['172.16.0.0/12', '2001:db8:8000::/33', '0.0.0.0/0']);
  t.ok(isAllowed('172.31.255.255', 'x', allow));
  t.ok(isAllowed('1.2.3.4', 'x', allow));
  t.ok(isAllowed('2001:db8:8000::1', 'x', allow));
  t.ok(isAllowed('2001:db8:ffff::1', 'x', allow));
  t.notOk(isAllowed('2001:db8:7fff::1', 'x', allow));
  t.notOk(isAllowed('::1', 'x', allow), '0.0.0.0/0 covers IPv4 only');
  t.ok(isAllowed('::1', 'x', parseAllowList(['::/0'])));
  t.ok(isAllowed('64:ff9b::a00:1', 'x', parseAllowList(['10.0.0.0/8'])), 'NAT64 judged by its IPv4 address');
});

t.test('parseAllowList: invalid entries throw naming the entry', async (t) => {
  const bad: [string, RegExp][] = [
    ['10.0.0.0/33', /prefix length must be an integer from 0 to 32/],
    ['::1/129', /from 0 to 128/],
    ['10.0.0.0/', /prefix length/],
    ['10.0.0.0/8a', /prefix length/],
    ['10.0.0.1/8', /did you mean 10\.0\.0\.0\/8/],
    ['fd00::1/8', /did you mean fd00::\/8/],
    ['300.1.1.1/8', /is not an IPv4 or IPv6 address/],
    ['example.com/24', /is not an IPv4 or IPv6 address/],
    ['*', /wildcard/],
    ['*.', /empty host name/],
    ['foo.*.com', /wildcard/],
    ['a..b', /empty label/],
    ['host:8080', /ports and schemes/],
    ['http://x', /not an IPv4 or IPv6 address|ports and schemes/],
    ['', /empty entry/],
    ['  ', /empty entry/],
    ['-bad.com', /invalid host name label "-bad"/],
    ['exa mple.com', /invalid host name label/],
    ['10.0.0', /looks like an IP address/],
    ['256.1.1.1', /looks like an IP address/],
    [`${'a'.repeat(64)}.com`, /invalid host name label/],
  ];
  for (const [entry, why] of bad) {
    t.throws(() => parseAllowList(['127.0.0.0/8', entry]), { message: why }, JSON.stringify(entry));
    t.throws(() => parseAllowList([entry]), { message: new RegExp(`^invalid configuration: EGRESS_ALLOW: "${escapeRegExp(entry)}"`) });
  }
  t.throws(
    () => parseAllowList(['10.0.0.0/33', 'ok.example', '*']),
    { code: 'CONFIG_INVALID', message: /EGRESS_ALLOW: "10\.0\.0\.0\/33": .*; EGRESS_ALLOW: "\*": / },
    'all problems named',
  );
});

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ---------------------------------------------------------------------------------------------------------------
// Lookup filter (fake resolver: no DNS, no sockets)

function fakeResolver(answers: readonly (readonly string[])[]): Resolver & { calls: number } {
  let i = 0;
  const r = ((_host: string, _opts: unknown, cb: (err: NodeJS.ErrnoException | null, a: LookupAddress[]) => void) => {
    const list = answers[Math.min(i++, answers.length - 1)] ?? [];
    r.calls = i;
    process.nextTick(() =>
      cb(
        null,
        list.map((address) => ({ address, family: net.isIP(address) })),
      ),
    );
  }) as Resolver & { calls: number };
  r.calls = 0;
  return r;
}

function runLookup(
  fn: LookupFunction,
  host: string,
  options: LookupOptions,
): Promise<{ err: (Error & { code?: string }) | null; address: string | LookupAddress[]; family?: number }> {
  return new Promise((resolve) => fn(host, options, (err, address, family) => resolve({ err, address, family })));
}

t.test('lookup drops refused addresses and refuses hosts with none left', async (t) => {
  const empty = parseAllowList([]);
  const mixed = createEgressLookup(
    empty,
    fakeResolver([['127.0.0.1', '93.184.215.14', '10.0.0.1', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']]),
  );
  const all = await runLookup(mixed, 'mixed.example', { all: true });
  t.equal(all.err, null);
  t.same(all.address, [
    { address: '93.184.215.14', family: 4 },
    { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
  ]);
  const one = await runLookup(mixed, 'mixed.example', {});
  t.same([one.err, one.address, one.family], [null, '93.184.215.14', 4], 'single answer: the first permitted address');

  const priv = createEgressLookup(empty, fakeResolver([['10.0.0.1', 'fd00::1']]));
  const blocked = await runLookup(priv, 'intranet.example', { all: true });
  t.equal(blocked.err?.code, 'EGRESS_BLOCKED');
  t.match(blocked.err?.message, /intranet\.example.*10\.0\.0\.1, fd00::1/);

  const named = createEgressLookup(parseAllowList(['intranet.example']), fakeResolver([['10.0.0.1', 'fd00::1']]));
  t.same((await runLookup(named, 'Intranet.Example', { all: true })).address, [
    { address: '10.0.0.1', family: 4 },
    { address: 'fd00::1', family: 6 },
  ]);

  const failing = createEgressLookup(empty, (_h, _o, cb) =>
    cb(Object.assign(new Error('getaddrinfo ENOTFOUND nope'), { code: 'ENOTFOUND' }), []),
  );
  t.equal((await runLookup(failing, 'nope', { all: true })).err?.code, 'ENOTFOUND', 'resolver errors pass through');
});

t.test('lookup judges every resolution anew (DNS rebinding)', async (t) => {
  const resolver = fakeResolver([['93.184.215.14'], ['169.254.169.254']]);
  const lookup = createEgressLookup(parseAllowList([]), resolver);
  t.same((await runLookup(lookup, 'rebind.example', {})).address, '93.184.215.14');
  const second = await runLookup(lookup, 'rebind.example', {});
  t.equal(second.err?.code, 'EGRESS_BLOCKED');
  t.match(second.err?.message, /169\.254\.169\.254/);
  t.equal(resolver.calls, 2);
});

// ---------------------------------------------------------------------------------------------------------------
// Agent against a real loopback server

t.test('loopback is refused by default and reachable when allowed', async (t) => {
  const srv = await serve(t, ok);
  const url = `http://127.0.0.1:${srv.port}/`;

  const err = await failure(get(url, agent(t, [])));
  t.equal(err.code, 'EGRESS_BLOCKED');
  t.match(err.message, /127\.0\.0\.1/);
  t.equal(srv.connections(), 0, 'the server never saw a connection');
  t.same(classifyNetworkError(err), { reason: 'egress_blocked', message: 'egress blocked: 127.0.0.1 is not a public address' });

  t.same(await get(url, agent(t, ['127.0.0.0/8'])), { status: 200, body: 'ok' });
  t.equal(srv.connections(), 1);
});

t.test('IPv6 loopback and IPv4-mapped literals', async (t) => {
  const srv = await serve(t, ok);
  const v4only = agent(t, ['127.0.0.0/8']);
  const before = connectAttempts.length;
  const err = await failure(get(`http://[::1]:${srv.port}/`, v4only));
  t.equal(err.code, 'EGRESS_BLOCKED');
  t.match(err.message, /::1/);
  t.equal(connectAttempts.length, before, 'no socket was opened');

  const mapped = `http://[::ffff:127.0.0.1]:${srv.port}/`;
  t.equal((await failure(get(mapped, agent(t, [])))).code, 'EGRESS_BLOCKED', 'IPv4-mapped loopback refused by default');
  t.same(await get(mapped, v4only), { status: 200, body: 'ok' }, 'and judged by its IPv4 address when allowed');
});

t.test('other literal spellings of loopback are refused', async (t) => {
  const srv = await serve(t, ok);
  const a = agent(t, []);
  for (const host of ['0x7f.1', '2130706433', '127.1', '0.0.0.0']) {
    const err = await failure(get(`http://${host}:${srv.port}/`, a));
    t.equal(err.code, 'EGRESS_BLOCKED', host);
  }
  t.equal(srv.connections(), 0);
});

t.test('metadata and private literals are refused before any socket exists', async (t) => {
  const a = agent(t, ['127.0.0.0/8']);
  const before = connectAttempts.length;
  const started = Date.now();
  for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'https://10.0.0.1/', 'http://[fd00::1]:8080/']) {
    const err = await failure(get(url, a));
    t.equal(err.code, 'EGRESS_BLOCKED', url);
    t.equal(classifyNetworkError(err).reason, 'egress_blocked');
  }
  t.same(connectAttempts.slice(before), [], 'net.connect and tls.connect were never called');
  t.ok(Date.now() - started < 1000, 'refused at once, not after a timeout');
});

t.test('a host name resolving to loopback is refused by default, allowed by range or by name', async (t) => {
  const srv = await serve(t, ok);
  const url = `http://localhost:${srv.port}/`;

  const err = await failure(get(url, agent(t, [])));
  t.equal(err.code, 'EGRESS_BLOCKED');
  t.match(err.message, /localhost resolves only to non-public addresses \(.*127\.0\.0\.1/);
  t.equal(classifyNetworkError(err).reason, 'egress_blocked');

  const tlsErr = await failure(get(`https://localhost:${srv.port}/`, agent(t, [])));
  t.equal(tlsErr.code, 'EGRESS_BLOCKED', 'the TLS connector goes through the same lookup');
  t.equal(srv.connections(), 0, 'refused before connecting');

  t.same(await get(url, agent(t, ['127.0.0.0/8'])), { status: 200, body: 'ok' });
  t.same(await get(url, agent(t, ['LOCALHOST'])), { status: 200, body: 'ok' });
  t.equal((await failure(get(url, agent(t, ['10.0.0.0/8', '*.localhost'])))).code, 'EGRESS_BLOCKED');
});

t.test('undici/net skip `lookup` for IP literals, so a lookup-only agent would not be enough', async (t) => {
  // Documents why createEgressAgent also checks literal hosts in its connector.
  const srv = await serve(t, ok);
  const lookupOnly = new Agent({ connect: { lookup: createEgressLookup(parseAllowList([])), timeout: 500 } });
  t.teardown(() => lookupOnly.destroy());
  t.same(await get(`http://127.0.0.1:${srv.port}/`, lookupOnly), { status: 200, body: 'ok' });
  t.equal((await failure(get(`http://localhost:${srv.port}/`, lookupOnly))).code, 'EGRESS_BLOCKED');
});

t.test('connections are kept alive and bounded per origin', async (t) => {
  let inFlight = 0;
  let maxInFlight = 0;
  const srv = await serve(t, (_req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    setTimeout(() => {
      inFlight--;
      res.end('ok');
    }, 50);
  });
  const a = agent(t, ['127.0.0.0/8'], { connections: 2 });
  const url = `http://127.0.0.1:${srv.port}/`;
  const results = await Promise.all(Array.from({ length: 6 }, () => get(url, a)));
  t.ok(results.every((r) => r.status === 200));
  t.equal(maxInFlight, 2);
  t.equal(srv.connections(), 2);
  await get(url, a);
  t.equal(srv.connections(), 2, 'the next request reuses a pooled connection');
});

// ---------------------------------------------------------------------------------------------------------------
// classifyNetworkError

t.test('classify: connection refused on a closed local port', async (t) => {
  const port = await freePort();
  const err = await failure(get(`http://127.0.0.1:${port}/`, agent(t, ['127.0.0.0/8'])));
  const c = classifyNetworkError(err);
  t.equal(c.reason, 'connection_refused');
  t.equal(c.message, `connect ECONNREFUSED 127.0.0.1:${port}`);
});

t.test('classify: timeouts of a local server that never answers', async (t) => {
  const srv = await serve(t, (req, res) => {
    if (req.url === '/body') res.writeHead(200, { 'content-length': '10' }).write('12345'); // never finishes
  });
  const a = agent(t, ['127.0.0.0/8']);
  const headers = await failure(get(`http://127.0.0.1:${srv.port}/`, a, { headersTimeout: 100 }));
  t.equal(headers.code, 'UND_ERR_HEADERS_TIMEOUT');
  t.same(classifyNetworkError(headers), { reason: 'timeout', message: headers.message });

  const body = await failure(
    request(`http://127.0.0.1:${srv.port}/body`, { dispatcher: a, bodyTimeout: 100, headersTimeout: 1000 }).then((r) => r.body.text()),
  );
  t.equal(body.code, 'UND_ERR_BODY_TIMEOUT');
  t.equal(classifyNetworkError(body).reason, 'timeout');

  const aborted = await failure(request(`http://127.0.0.1:${srv.port}/`, { dispatcher: a, signal: AbortSignal.timeout(100) }));
  t.equal(aborted.name, 'TimeoutError');
  t.equal(classifyNetworkError(aborted).reason, 'timeout');
});

t.test('classify: connection closed or reset by the server', async (t) => {
  const srv = await serve(t, (req) => {
    if (req.url === '/rst') req.socket.resetAndDestroy();
    else req.socket.destroy();
  });
  const a = agent(t, ['127.0.0.0/8']);
  const closed = await failure(get(`http://127.0.0.1:${srv.port}/`, a));
  t.equal(classifyNetworkError(closed).reason, 'connection_reset', `${closed.code}: ${closed.message}`);
  const reset = await failure(get(`http://127.0.0.1:${srv.port}/rst`, a));
  t.equal(classifyNetworkError(reset).reason, 'connection_reset', `${reset.code}: ${reset.message}`);
});

t.test('classify: TLS handshake against a plain HTTP server', async (t) => {
  const srv = await serve(t, ok);
  const err = await failure(get(`https://127.0.0.1:${srv.port}/`, agent(t, ['127.0.0.0/8'])));
  const c = classifyNetworkError(err);
  t.equal(c.reason, 'tls_error', `${err.code}: ${err.message}`);
  t.notMatch(c.message, /\n|openssl|\.c:\d+/, 'no OpenSSL source location');
  t.match(c.message, /wrong version number/);
});

function errno(code: string, message = `${code} failure`, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { code, ...extra });
}

t.test('classify: error codes and cause chains', async (t) => {
  const cases: [unknown, string][] = [
    [errno('ECONNREFUSED'), 'connection_refused'],
    [new TypeError('fetch failed', { cause: errno('ECONNREFUSED') }), 'connection_refused'],
    [new AggregateError([errno('ECONNREFUSED', 'connect ECONNREFUSED ::1:80'), errno('ECONNREFUSED')], ''), 'connection_refused'],
    [errno('ENOTFOUND', 'getaddrinfo ENOTFOUND nope.invalid', { syscall: 'getaddrinfo' }), 'dns_error'],
    [new TypeError('fetch failed', { cause: errno('EAI_AGAIN') }), 'dns_error'],
    [errno('EAI_NONAME'), 'dns_error'],
    [errno('ECONNRESET'), 'connection_reset'],
    [errno('EPIPE'), 'connection_reset'],
    [errno('UND_ERR_SOCKET', 'other side closed'), 'connection_reset'],
    [errno('UND_ERR_SOCKET', 'other side closed', { cause: errno('ECONNRESET') }), 'connection_reset'],
    [errno('UND_ERR_CONNECT_TIMEOUT'), 'timeout'],
    [errno('UND_ERR_HEADERS_TIMEOUT'), 'timeout'],
    [errno('UND_ERR_BODY_TIMEOUT'), 'timeout'],
    [errno('ETIMEDOUT'), 'timeout'],
    [new DOMException('The operation was aborted due to timeout', 'TimeoutError'), 'timeout'],
    [new DOMException('This operation was aborted', 'AbortError'), 'timeout'],
    [errno('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'), 'tls_error'],
    [errno('SELF_SIGNED_CERT_IN_CHAIN'), 'tls_error'],
    [errno('CERT_HAS_EXPIRED'), 'tls_error'],
    [errno('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), 'tls_error'],
    [errno('ERR_TLS_CERT_ALTNAME_INVALID'), 'tls_error'],
    [errno('ERR_SSL_WRONG_VERSION_NUMBER'), 'tls_error'],
    [
      new TypeError('fetch failed', { cause: errno('EGRESS_BLOCKED', 'egress blocked: 10.0.0.1 is not a public address') }),
      'egress_blocked',
    ],
    [errno('UND_ERR_CONNECT_TIMEOUT', 'x', { cause: new AggregateError([errno('EGRESS_BLOCKED')]) }), 'egress_blocked'],
    [errno('EHOSTUNREACH'), 'network_error'],
    [errno('HPE_INVALID_CONSTANT', 'Expected HTTP/'), 'network_error'],
    [new Error('boom'), 'network_error'],
    [undefined, 'network_error'],
    [null, 'network_error'],
    ['a string', 'network_error'],
    [{}, 'network_error'],
  ];
  for (const [err, reason] of cases) {
    const c = classifyNetworkError(err);
    t.equal(c.reason, reason, `${(err as { code?: string } | null)?.code ?? String(err)} -> ${reason}`);
    t.type(c.message, 'string');
    t.ok(c.message.length > 0);
  }
  t.equal(
    classifyNetworkError(new TypeError('fetch failed', { cause: errno('EAI_AGAIN', 'getaddrinfo EAI_AGAIN x') })).message,
    'getaddrinfo EAI_AGAIN x',
  );
  t.equal(
    classifyNetworkError(new AggregateError([errno('ECONNREFUSED', 'connect ECONNREFUSED ::1:80')], '')).message,
    'connect ECONNREFUSED ::1:80',
  );
});

t.test('classify: messages carry no stack text and cycles terminate', async (t) => {
  const err = errno('ECONNRESET', 'read ECONNRESET\n    at TCP.onStreamRead (node:internal/stream_base_commons:216:20)');
  const c = classifyNetworkError(err);
  t.equal(c.message, 'read ECONNRESET');
  t.notMatch(c.message, /node:internal|\n|\s+at\s/);
  const ssl = errno(
    'ERR_SSL_WRONG_VERSION_NUMBER',
    '40E7:error:0A00010B:SSL routines:tls_validate_record_header:wrong version number:../deps/openssl/ssl/rec.c:77:',
  );
  t.equal(classifyNetworkError(ssl).message, 'SSL routines: wrong version number (ERR_SSL_WRONG_VERSION_NUMBER)');
  t.notMatch(classifyNetworkError(new Error('plain')).message, /\bat\b.*:\d+:\d+/);
  t.ok(classifyNetworkError(new Error('x'.repeat(5000))).message.length <= 301);

  const a = new Error('outer') as Error & { cause?: unknown };
  const b = new Error('inner', { cause: a });
  a.cause = b;
  t.same(classifyNetworkError(a), { reason: 'network_error', message: 'outer' });
});

t.test('the host check of a client without a lookup: kept once known, asked again after a name that did not resolve', async (t) => {
  const answers: Array<EgressBlockedError | null | 'unresolved'> = [
    'unresolved',
    new EgressBlockedError('queue.example', ['10.0.0.5']),
    null,
  ];
  let asked = 0;
  const check = hostCheck('queue.example', parseAllowList([]), async () => {
    asked++;
    return answers.shift() ?? null;
  });
  t.equal(await check(), null, 'not resolved: left to the client, which fails with the DNS reason');
  t.match(await check(), { status: 'failed', response_data: { reason: 'egress_blocked' } }, 'resolved since, to an address not allowed');
  t.match(await check(), { response_data: { reason: 'egress_blocked' } }, 'that answer is kept');
  t.equal(asked, 2, 'asked once more after the name did not resolve, then no more');
});
