// A webhook receiver whose certificate a private CA signed: refused (tls_error) by a sender that
// does not trust that CA, delivered by one started with NODE_EXTRA_CA_CERTS naming it, as
// docs/operations.md tells operators. The sender runs as a process of its own, since Node reads
// NODE_EXTRA_CA_CERTS only at start. The certificates in fixtures/private-ca (a CA, and a server
// certificate it signed for localhost and 127.0.0.1, both valid until 2126) were made with openssl:
//   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500 \
//     -subj "/CN=Switchyard test private CA" -addext basicConstraints=critical,CA:TRUE ...
//   openssl x509 -req -CA ca.pem ... -extfile <(echo subjectAltName=DNS:localhost,IP:127.0.0.1)
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { listenLocal } from '@switchyard/shared/testing/index.ts';

const dir = join(import.meta.dirname, 'fixtures/private-ca');

async function deliver(url: string, env: Record<string, string | undefined>) {
  const { stdout } = await promisify(execFile)(process.execPath, [join(dir, 'deliver.ts'), url], { env, timeout: 120_000 });
  return JSON.parse(stdout.trim().split('\n').pop() as string);
}

t.test('a webhook to a private-CA receiver: tls_error without the CA, delivered with NODE_EXTRA_CA_CERTS', async (t) => {
  const received: string[] = [];
  const server = createServer(
    { key: readFileSync(join(dir, 'server-key.pem')), cert: readFileSync(join(dir, 'server.pem')) },
    (req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    },
  );
  const url = `https://127.0.0.1:${(await listenLocal(t, server)).port}/hook`;
  // A plain process, as a sender runs: no CA of the test's environment, none of tap's loaders.
  const { NODE_EXTRA_CA_CERTS: _ca, NODE_OPTIONS: _opts, ...env } = process.env;

  const untrusted = await deliver(url, env);
  t.match(untrusted, { status: 'failed', response_data: { reason: 'tls_error' } }, 'refused while the CA is unknown');
  t.equal(received.length, 0, 'nothing reached the receiver');

  const trusted = await deliver(url, { ...env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') });
  t.match(trusted, { status: 'success', code: '200' }, 'delivered once the CA is trusted');
  t.same(received, ['{"ok":true}'], 'the receiver got the event data');
});
