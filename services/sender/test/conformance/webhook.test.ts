// Conformance fixture: webhook, against a local HTTP receiver that verifies the Standard Webhooks
// signature of every request (with the standardwebhooks package) and answers 401 when it does not verify.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { listenLocal } from '@switchyard/shared/testing/index.ts';
import { Webhook } from 'standardwebhooks';
import { createEgressAgent, parseAllowList } from '../../src/egress.ts';
import type { Target } from '../../src/sender.ts';
import { createWebhookSender } from '../../src/webhook/sender.ts';
import { conformance, type Received } from './suite.ts';

const PREFIX = 'x-outpost-';
const secretOf = (n: number) => `whsec_${Buffer.from(`conformance-secret-${n}-0123456789ab`).toString('base64')}`;

conformance({
  type: 'webhook',
  cannot: { invalid_config: 'a webhook URL that can never work is refused on create; a blocked address is egress_blocked' },
  async start(t) {
    // Per path: the secret that verifies, what arrived, and a forced answer.
    const paths = new Map<
      string,
      { secret: string; got: Array<{ headers: IncomingHttpHeaders; body: string }>; answer?: [number, Record<string, string>] }
    >();
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const p = paths.get(req.url ?? '');
        if (!p) return void res.writeHead(404).end('no such hook');
        if (p.answer) return void res.writeHead(p.answer[0], p.answer[1]).end('forced answer');
        try {
          new Webhook(p.secret).verify(body, {
            'webhook-id': String(req.headers['webhook-id']),
            'webhook-timestamp': String(req.headers['webhook-timestamp']),
            'webhook-signature': String(req.headers['webhook-signature']),
          });
        } catch (err) {
          return void res.writeHead(401).end(`signature: ${(err as Error).message}`);
        }
        p.got.push({ headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    const { url: base } = await listenLocal(t, server);
    const agent = createEgressAgent({ allow: parseAllowList(['127.0.0.0/8']), connectTimeoutMs: 2000 });
    t.teardown(() => agent.close());
    let n = 0;
    const pathOf = (target: Target) => new URL(String(target.config.url)).pathname;
    const destination = async (): Promise<Target> => {
      n++;
      paths.set(`/hook/${n}`, { secret: secretOf(n), got: [] });
      return {
        id: `des_wh_${n}`,
        tenant_id: 'acme',
        type: 'webhook',
        config: { url: `${base}/hook/${n}` },
        credentials: { secret: secretOf(n) },
      };
    };
    return {
      sender: createWebhookSender({ dispatcher: agent, mode: 'standard', headerPrefix: PREFIX, responseMaxBytes: 1024 }),
      successCode: '200',
      destination,
      async received(target) {
        return (paths.get(pathOf(target))?.got ?? []).map(
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
      pointAt: (target, host, port) => ({ ...target, config: { ...target.config, url: `http://${host}:${port}/hook` } }),
      async rotate(target) {
        const p = paths.get(pathOf(target));
        if (!p) throw new Error('unknown destination');
        p.secret = secretOf(++n);
        return { ...target, credentials: { secret: p.secret } };
      },
      failures: {
        unauthorized: async (good) => ({ target: { ...good, credentials: { secret: secretOf(99_999) } }, expect: { code: '401' } }),
        not_found: async (good) => ({ target: { ...good, config: { ...good.config, url: `${base}/nowhere` } }, expect: { code: '404' } }),
        throttled: async (good) => {
          const p = paths.get(pathOf(good));
          if (p) p.answer = [429, { 'retry-after': '7' }];
          return { target: good, expect: { code: '429', minRetryAfterMs: 7000 } };
        },
        peer_error: async (good) => {
          const p = paths.get(pathOf(good));
          if (p) p.answer = [503, {}];
          return { target: good };
        },
      },
      checkReceived(t, r) {
        t.equal(r.extra?.contentType, 'application/json');
      },
    };
  },
});
