// shared/src/tracing.ts against a local OTLP/HTTP collector: a record's traceparent makes the span
// its child, a missing or malformed one starts a new trace (a producer's bad header never fails a
// record), and close() exports what is buffered.
import { createServer } from 'node:http';
import { listenLocal } from '../src/testing/index.ts';
import t from 'tap';
import { createTracing } from '../src/tracing.ts';

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  status?: { code?: number; message?: string };
}

t.test('parents from record headers; malformed ones start a trace', async (t) => {
  const spans: Span[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: Span[] }> }>;
      };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const { url } = await listenLocal(t, server);
  const tracing = createTracing({ endpoint: url, serviceName: 'test' });

  const root = tracing.span('root', 'producer', undefined);
  const headers = root.headers();
  t.match(headers.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'a W3C traceparent, sampled');
  const child = tracing.span('child', 'consumer', headers);
  child.end(new Error('boom'));
  root.end();
  tracing.span('garbage', 'consumer', { traceparent: 'not-a-traceparent' }).end();
  tracing.span('none', 'consumer', {}).end();
  await tracing.close();

  const by = (name: string) => spans.find((s) => s.name === name) as Span;
  t.equal(spans.length, 4, 'every span exported at close');
  t.equal(by('child').traceId, by('root').traceId);
  t.equal(by('child').parentSpanId, by('root').spanId, 'child of the span in the header');
  t.equal(by('child').status?.code, 2, 'an error marks the span failed');
  t.equal(by('child').status?.message, 'boom');
  for (const name of ['garbage', 'none']) {
    t.notOk(by(name).parentSpanId, `${name}: a root span`);
    t.not(by(name).traceId, by('root').traceId, `${name}: a trace of its own`);
  }
});
