// A fast local webhook receiver for the benchmark, run as its own process so its CPU is measured on
// its own. It timestamps every arrival, reads `sent_at` (epoch ms, put into the event data by the load
// generator) from the body to compute publish -> receive latency, verifies Standard Webhooks signatures
// on a sample, counts repeats of (path, webhook-id), and holds requests to "hanging" paths open until
// the client gives up (the sender's delivery timeout).
//
//   node bench/receiver.ts [--port 0] [--also-listen 127.0.0.2] [--hang-prefix /hang/] [--hang-fraction 0] [--verify-every 100]
//
// Prints one JSON line {"listening": <port>, "hosts": [...]} on stdout when ready. Control endpoints (JSON):
//   POST /__bench/secrets  {"<path>": "<whsec_...>", ...}   signing secrets per destination path
//   POST /__bench/reset                                     forget every arrival (secrets stay)
//   GET  /__bench/stats[?from=&to=&latency=1&series=1]
// Every other path is a destination: 200 "ok", or held open when it hangs. Paths under /ceiling are
// the bare ceiling loop's and are counted apart.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { nowMs, summarize, TimedSamples } from './lib/stats.ts';

const { values: opt } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    'hang-prefix': { type: 'string', default: '/hang/' },
    'also-listen': { type: 'string', default: '' },
    'hang-fraction': { type: 'string', default: '0' },
    'hang-max-ms': { type: 'string', default: '120000' },
    'verify-every': { type: 'string', default: '100' },
  },
});
const HANG_PREFIX = opt['hang-prefix'] as string;
const HANG_FRACTION = Number(opt['hang-fraction']);
const HANG_MAX_MS = Number(opt['hang-max-ms']);
const VERIFY_EVERY = Math.max(1, Number(opt['verify-every']));

/** A stable number in [0, 1) per path, so a fraction of destinations (not of requests) hangs. */
function pathFraction(path: string): number {
  let h = 2166136261;
  for (let i = 0; i < path.length; i++) {
    h ^= path.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return (h >>> 0) / 2 ** 32;
}

const GROUPS = ['ok', 'hang', 'ceiling'] as const;
type Group = (typeof GROUPS)[number];

const state = {
  samples: { ok: new TimedSamples(), hang: new TimedSamples(), ceiling: new TimedSamples() } as Record<Group, TimedSamples>,
  received: { ok: 0, hang: 0, ceiling: 0 } as Record<Group, number>,
  noTimestamp: 0,
  hungNow: 0,
  hungAborted: 0,
  hungAnswered: 0,
  seen: new Set<string>(),
  /** Repeats of (path, webhook-id) per group: on hanging paths they are the expected retries. */
  duplicates: { ok: 0, hang: 0, ceiling: 0 } as Record<Group, number>,
  verify: { checked: 0, ok: 0, failed: 0, noSecret: 0, unsigned: 0, errors: [] as string[] },
  signedSeen: 0,
};
const secrets = new Map<string, Webhook>();
const SEEN_MAX = 5_000_000;

function reset(): void {
  for (const g of GROUPS) {
    state.samples[g].clear();
    state.received[g] = 0;
  }
  state.noTimestamp = 0;
  state.hungAborted = 0;
  state.hungAnswered = 0;
  state.seen.clear();
  state.duplicates = { ok: 0, hang: 0, ceiling: 0 };
  state.verify = { checked: 0, ok: 0, failed: 0, noSecret: 0, unsigned: 0, errors: [] };
  state.signedSeen = 0;
}

function sentAt(body: string): number | null {
  const i = body.indexOf('"sent_at":');
  if (i < 0) return null;
  const v = Number.parseFloat(body.slice(i + 10, i + 40));
  return Number.isFinite(v) ? v : null;
}

function verifySample(req: IncomingMessage, path: string, body: string): void {
  const id = req.headers['webhook-id'];
  if (typeof id !== 'string') {
    state.verify.unsigned++;
    return;
  }
  if (state.signedSeen++ % VERIFY_EVERY !== 0) return;
  const wh = secrets.get(path);
  if (!wh) {
    state.verify.noSecret++;
    return;
  }
  state.verify.checked++;
  try {
    wh.verify(body, {
      'webhook-id': id,
      'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
      'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
    });
    state.verify.ok++;
  } catch (err) {
    state.verify.failed++;
    if (state.verify.errors.length < 5) state.verify.errors.push(`${path}: ${(err as Error).message}`);
  }
}

function json(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function control(req: IncomingMessage, res: ServerResponse, body: string): void {
  const url = new URL(req.url ?? '/', 'http://x');
  if (req.method === 'POST' && url.pathname === '/__bench/secrets') {
    for (const [path, secret] of Object.entries(JSON.parse(body) as Record<string, string>)) secrets.set(path, new Webhook(secret));
    json(res, 200, { secrets: secrets.size });
    return;
  }
  if (req.method === 'POST' && url.pathname === '/__bench/reset') {
    reset();
    json(res, 200, { ok: true });
    return;
  }
  if (req.method === 'GET' && url.pathname === '/__bench/stats') {
    const q = url.searchParams;
    const from = q.has('from') ? Number(q.get('from')) : -Infinity;
    const to = q.has('to') ? Number(q.get('to')) : Infinity;
    const out: Record<string, unknown> = {
      now: nowMs(),
      received: state.received,
      inWindow: Object.fromEntries(GROUPS.map((g) => [g, state.samples[g].countIn(from, to)])),
      noTimestamp: state.noTimestamp,
      hungNow: state.hungNow,
      hungAborted: state.hungAborted,
      hungAnswered: state.hungAnswered,
      duplicates: state.duplicates,
      verify: state.verify,
      samplesDropped: GROUPS.reduce((n, g) => n + state.samples[g].dropped, 0),
      rssMb: Math.round(process.memoryUsage().rss / 1048576),
    };
    if (q.get('latency') === '1') out.latency = Object.fromEntries(GROUPS.map((g) => [g, summarize(state.samples[g].window(from, to))]));
    if (q.get('series') === '1') {
      out.series = Object.fromEntries(GROUPS.map((g) => [g, Object.fromEntries(state.samples[g].perSecond(from, to))]));
    }
    json(res, 200, out);
    return;
  }
  json(res, 404, { error: 'unknown control endpoint' });
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = nowMs();
    const path = req.url ?? '/';
    const body = (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8');
    if (path.startsWith('/__bench/')) {
      control(req, res, body);
      return;
    }

    const hang = path.startsWith(HANG_PREFIX) || (HANG_FRACTION > 0 && pathFraction(path) < HANG_FRACTION);
    const group: Group = hang ? 'hang' : path.startsWith('/ceiling') ? 'ceiling' : 'ok';
    state.received[group]++;
    const sent = sentAt(body);
    if (sent === null) state.noTimestamp++;
    else state.samples[group].add(at, at - sent);
    if (group === 'ceiling') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
      res.end('ok');
      return;
    }
    const id = req.headers['webhook-id'];
    if (typeof id === 'string' && state.seen.size < SEEN_MAX) {
      const key = `${path}\n${id}`;
      if (state.seen.has(key)) state.duplicates[group]++;
      else state.seen.add(key);
    }
    verifySample(req, path, body);

    if (hang) {
      // Held open until the sender's timeout closes the connection (or, as a bound, HANG_MAX_MS).
      state.hungNow++;
      let done = false;
      const finish = (answered: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        state.hungNow--;
        if (answered) state.hungAnswered++;
        else state.hungAborted++;
      };
      const timer = setTimeout(() => {
        finish(true);
        res.writeHead(504, { 'content-type': 'text/plain' });
        res.end('hung');
      }, HANG_MAX_MS);
      res.on('close', () => finish(false));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
    res.end('ok');
  });
}

function serve(host: string, port: number): Promise<Server | null> {
  const server = createServer(handle);
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0;
  return new Promise((resolve) => {
    server.once('error', () => resolve(null));
    server.listen(port, host, () => resolve(server));
  });
}

// The same receiver on more loopback addresses (--also-listen 127.0.0.2), same port: destinations
// there are another origin for the sender's connection pool, as another host would be.
const main = await serve(opt.host as string, Number(opt.port));
if (!main) throw new Error(`cannot listen on ${opt.host}:${opt.port}`);
const port = (main.address() as AddressInfo).port;
const servers = [main];
const hosts = [opt.host as string];
for (const host of (opt['also-listen'] as string).split(',').filter(Boolean)) {
  const extra = await serve(host, port);
  if (extra) {
    servers.push(extra);
    hosts.push(host);
  }
}
process.stdout.write(`${JSON.stringify({ listening: port, hosts })}\n`);
const stop = () => {
  for (const s of servers) s.closeAllConnections();
  Promise.all(servers.map((s) => new Promise((r) => s.close(r)))).then(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
