// What a failure of the database or Kafka becomes in the API's one error shape (errors.ts,
// toAppError): unavailable (503, retryable) when nothing the caller did is wrong and a retry can
// succeed (a connection lost, a server shutting down, a disk full or memory short), else a generic
// 500 that says nothing of the cause.
import { connect } from 'node:net';
import t from 'tap';
import { waitFor } from '@switchyard/shared/testing/index.ts';
import { toAppError } from '../src/errors.ts';

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

t.test('database failures a retry can outlive are 503, the rest a generic 500', async (t) => {
  for (const [code, what] of [
    ['08006', 'connection failure'],
    ['57P01', 'admin shutdown'],
    ['53100', 'could not extend file: No space left on device (a full disk)'],
    ['53200', 'out of memory'],
    ['ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'],
  ]) {
    const e = toAppError(pgError(code as string, what as string));
    t.same([e.status, e.code, e.retryable], [503, 'SERVICE_UNAVAILABLE', true], `${code}: ${what}`);
    t.notMatch(e.message, what as string, 'the cause is not told to the client');
  }
  const other = toAppError(pgError('42P01', 'relation "events" does not exist'));
  t.same([other.status, other.code], [500, 'INTERNAL'], 'a fault of ours: 500');
  t.notMatch(other.message, /relation/);
});

t.test('a request that comes while the gateway closes: 503 in the API error shape, with Retry-After', async (t) => {
  const { buildEmbeddedTestApp } = await import('./helpers.ts');
  const { app, config } = await buildEmbeddedTestApp(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  // A request in flight holds the close open; one pipelined behind it on the same connection is
  // read while the gateway closes.
  const socket = connect(port, '127.0.0.1');
  let answers = '';
  socket.on('data', (d: Buffer) => (answers += d.toString()));
  const body = JSON.stringify({ tenant_id: 'acme', topic: 'user.created', data: {} });
  const received = new Promise((r) => app.server.once('request', r));
  socket.write(
    `POST /api/v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${config.API_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
  );
  await received;
  const closed = app.close();
  // The server stops listening once the preClose hooks have run.
  await waitFor('the gateway to close its listener', () => !app.server.listening || undefined);
  socket.write(`${body.slice(5)}GET /api/v1/tenants/acme HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${config.API_KEY}\r\n\r\n`);
  await waitFor('both answers', () => (answers.match(/HTTP\/1\.1 /g) ?? []).length >= 2 || undefined);
  socket.destroy();
  await closed;
  const second = answers.slice(answers.lastIndexOf('HTTP/1.1 '));
  t.match(second, /^HTTP\/1\.1 503/);
  t.match(second, /"code":"SERVICE_UNAVAILABLE"/, 'the documented shape, not the framework body');
  t.match(second, /retry-after: /i, 'with Retry-After');
});
