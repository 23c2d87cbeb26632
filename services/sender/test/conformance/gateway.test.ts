// Conformance fixture: gateway, against a local event gateway: an HTTP server with sources, each
// with its signing key, that checks X-Hookdeck-Signature against the body with its own HMAC.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { listenLocal } from '@switchyard/shared/testing/index.ts';
import { createEgressAgent, parseAllowList } from '../../src/egress.ts';
import { createGatewaySender } from '../../src/gateway/sender.ts';
import type { Target } from '../../src/sender.ts';
import { conformance, type Received } from './suite.ts';

const PREFIX = 'x-outpost-';
const tokenOf = (sourceId: string, key: string) => Buffer.from(`${sourceId}:${key}`).toString('base64');

conformance({
  type: 'gateway',
  async start(t) {
    const sources = new Map<
      string,
      { key: string; got: Array<{ headers: IncomingHttpHeaders; body: string }>; answer?: [number, Record<string, string>] }
    >();
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const source = sources.get(decodeURIComponent((req.url ?? '').slice(1)));
        if (req.method !== 'POST' || !source) return void res.writeHead(404).end('{"message":"no such source"}');
        if (source.answer) return void res.writeHead(source.answer[0], source.answer[1]).end('{"message":"forced"}');
        const expected = Buffer.from(`v0=${createHmac('sha256', source.key).update(body).digest('base64')}`);
        const given = Buffer.from(String(req.headers['x-hookdeck-signature'] ?? ''));
        if (given.length !== expected.length || !timingSafeEqual(given, expected))
          return void res.writeHead(401).end('{"message":"invalid signature"}');
        source.got.push({ headers: req.headers, body: body.toString('utf8') });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"SUCCESS"}');
      });
    });
    const { url: base } = await listenLocal(t, server);
    const agent = createEgressAgent({ allow: parseAllowList(['127.0.0.0/8']), connectTimeoutMs: 2000 });
    t.teardown(() => agent.close());
    let n = 0;
    const sourceOf = (target: Target) => Buffer.from(String(target.credentials.token), 'base64').toString().split(':')[0] ?? '';
    // pointAt moves the base URL, which is the deployment's: a sender per base.
    const senders = new Map<string, ReturnType<typeof createGatewaySender>>();
    const senderAt = (baseUrl: string) => {
      let s = senders.get(baseUrl);
      if (!s) {
        s = createGatewaySender({ dispatcher: agent, baseUrl, headerPrefix: PREFIX, responseMaxBytes: 1024 });
        senders.set(baseUrl, s);
      }
      return s;
    };
    return {
      // The base URL travels in the target's config only in this fixture (see pointAt): the type has no config.
      sender: {
        open: (target) => senderAt(String(target.config.test_base_url ?? base)).open(target),
        close: async () => {},
      },
      successCode: '200',
      async destination() {
        const sourceId = `src_${++n}`;
        const key = `signing-key-${n}-${Date.now()}`;
        sources.set(sourceId, { key, got: [] });
        return { id: `des_gw_${n}`, tenant_id: 'acme', type: 'gateway', config: {}, credentials: { token: tokenOf(sourceId, key) } };
      },
      async received(target) {
        return (sources.get(sourceOf(target))?.got ?? []).map(
          ({ headers, body }): Received => ({
            body,
            metadata: Object.fromEntries(
              Object.entries(headers)
                .filter(([k]) => k.startsWith(PREFIX))
                .map(([k, v]) => [k.slice(PREFIX.length), String(v)]),
            ),
            extra: { contentType: headers['content-type'] },
          }),
        );
      },
      pointAt: (target, host, port) => ({ ...target, config: { test_base_url: `http://${host}:${port}` } }),
      async rotate(target) {
        const id = sourceOf(target);
        const s = sources.get(id);
        if (!s) throw new Error('unknown source');
        s.key = `rotated-${Date.now()}`;
        return { ...target, credentials: { token: tokenOf(id, s.key) } };
      },
      failures: {
        unauthorized: async (good) => ({
          target: { ...good, credentials: { token: tokenOf(sourceOf(good), 'wrong-key') } },
          expect: { code: '401' },
        }),
        not_found: async (good) => ({ target: { ...good, credentials: { token: tokenOf('src_none', 'k') } }, expect: { code: '404' } }),
        throttled: async (good) => {
          const s = sources.get(sourceOf(good));
          if (s) s.answer = [429, { 'retry-after': '6' }];
          return { target: good, expect: { code: '429', minRetryAfterMs: 6000 } };
        },
        invalid_config: async (good) => ({ target: { ...good, credentials: { token: Buffer.from('no-colon-here').toString('base64') } } }),
      },
      checkReceived(t, r) {
        t.equal(r.extra?.contentType, 'application/json');
      },
    };
  },
});
