// post(): one webhook request through undici's dispatch, against real local HTTP servers.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import t from 'tap';
import { Agent } from 'undici';
import { DISCARD_MAX_BYTES, post } from '../src/post.ts';
import { freePort, listenLocal, type Teardown } from '@switchyard/shared/testing/index.ts';

interface Server {
  url: string;
  /** Request lines seen (method and path). */
  seen: string[];
  /** Connections accepted. */
  connections: () => number;
}

async function serve(t: Teardown, answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<Server> {
  const seen: string[] = [];
  let connections = 0;
  const srv = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => answer(req, res));
  });
  srv.on('connection', () => {
    connections++;
  });
  return { url: (await listenLocal(t, srv)).url, seen, connections: () => connections };
}

function agent(t: Teardown, connections?: number): Agent {
  const a = new Agent(connections ? { connections } : {});
  t.teardown(() => a.destroy());
  return a;
}

const never = () => new AbortController().signal;
const req = (signal: AbortSignal, maxBytes = 1000) => ({
  headers: { 'content-type': 'application/json' },
  body: '{"a":1}',
  signal,
  maxBytes,
});

t.test('status, body, Retry-After; the path and query go as given', async (t) => {
  const srv = await serve(t, (_req, res) => {
    res.writeHead(503, { 'retry-after': '7', 'content-type': 'text/plain' });
    res.end('busy ☃');
  });
  const res = await post(agent(t), `${srv.url}/hooks/in?token=x%20y`, req(never()));
  t.same(res, { statusCode: 503, retryAfter: '7', text: 'busy ☃', truncated: false });
  t.same(srv.seen, ['POST /hooks/in?token=x%20y']);
});

t.test('a 1xx answer is passed over: the final status and headers count', async (t) => {
  const srv = await serve(t, (_req, res) => {
    res.writeProcessing(); // 102, then the real answer
    res.writeHead(201, { 'retry-after': '3' });
    res.end('done');
  });
  t.same(await post(agent(t), srv.url, req(never())), { statusCode: 201, retryAfter: '3', text: 'done', truncated: false });
});

t.test('a long answer is cut at maxBytes, read to its end, and the connection is used again', async (t) => {
  const srv = await serve(t, (_req, res) => {
    res.writeHead(200);
    // Several chunks, so the cut falls inside a later one.
    for (let i = 0; i < 8; i++) res.write('0123456789'.repeat(100));
    res.end();
  });
  const a = agent(t);
  const first = await post(a, srv.url, req(never(), 2500));
  t.equal(first.text.length, 2500);
  t.equal(first.text, '0123456789'.repeat(250));
  t.equal(first.truncated, true);
  const exact = await post(a, srv.url, req(never(), 8000));
  t.equal(exact.truncated, false, 'exactly maxBytes is not truncated');
  t.equal(exact.text.length, 8000);
  for (let i = 0; i < 4; i++) t.equal((await post(a, srv.url, req(never(), 10))).truncated, true);
  // undici's pool opens a second connection for the second request; after that both are reused.
  t.ok(srv.connections() <= 2, `kept-alive connections reused: ${srv.connections()} for 6 requests`);
});

t.test(`an answer without end is cut ${DISCARD_MAX_BYTES} bytes past the cap: the answer so far, the connection closed`, async (t) => {
  let stopped = false;
  const srv = await serve(t, (_req, res) => {
    res.writeHead(200);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = () => {
      while (!stopped && res.write(chunk)) {
        if (res.destroyed) return;
      }
      if (!stopped && !res.destroyed) res.once('drain', pump);
    };
    res.on('close', () => {
      stopped = true;
    });
    pump();
  });
  const a = agent(t);
  const started = Date.now();
  const res = await post(a, srv.url, req(AbortSignal.timeout(10_000), 100));
  // Without the limit this would run until the deadline and fail as a timeout.
  t.same(
    { statusCode: res.statusCode, length: res.text.length, truncated: res.truncated },
    { statusCode: 200, length: 100, truncated: true },
  );
  t.ok(Date.now() - started < 5000, 'long before the deadline');
  await new Promise((r) => setTimeout(r, 100));
  t.ok(stopped, 'the connection was closed, so the server stopped writing');
});

t.test('redirects are not followed', async (t) => {
  const srv = await serve(t, (_req, res) => {
    res.writeHead(307, { location: '/elsewhere' });
    res.end();
  });
  const res = await post(agent(t), `${srv.url}/first`, req(never()));
  t.equal(res.statusCode, 307);
  t.same(srv.seen, ['POST /first']);
});

t.test('the signal ends a request waiting for its answer, with the signal reason', async (t) => {
  const srv = await serve(t, () => undefined); // never answers
  const started = Date.now();
  const err = await post(agent(t), srv.url, req(AbortSignal.timeout(150))).catch((e: unknown) => e);
  t.equal((err as Error).name, 'TimeoutError');
  t.ok(Date.now() - started < 2000, 'at the deadline');
});

t.test('the signal ends a request still queued for a connection, without waiting for one', async (t) => {
  const srv = await serve(t, () => undefined); // never answers: the one connection stays busy
  const a = agent(t, 1);
  const first = new AbortController();
  const busy = post(a, srv.url, req(first.signal)).catch((e: unknown) => e);
  const started = Date.now();
  const err = await post(a, srv.url, req(AbortSignal.timeout(150))).catch((e: unknown) => e);
  t.equal((err as Error).name, 'TimeoutError');
  t.ok(Date.now() - started < 2000, 'rejected at its deadline while the connection is still taken');
  first.abort(new Error('done'));
  t.equal(((await busy) as Error).message, 'done');
  t.same(srv.seen, ['POST /'], 'the queued request was never sent');
});

t.test('an already aborted signal sends nothing', async (t) => {
  const srv = await serve(t, (_req, res) => res.end());
  const c = new AbortController();
  c.abort(new Error('gone'));
  const err = await post(agent(t), srv.url, req(c.signal)).catch((e: unknown) => e);
  t.equal((err as Error).message, 'gone');
  t.same(srv.seen, []);
});

t.test("connection failures reject with undici's error", async (t) => {
  const port = await freePort(); // nothing listens on it: it refuses
  const err = await post(agent(t), `http://127.0.0.1:${port}/`, req(never())).catch((e: unknown) => e);
  t.equal((err as NodeJS.ErrnoException).code, 'ECONNREFUSED');
});
