// docker-compose.yml is accepted by the real Docker Compose CLI (`docker compose config`), and each
// required secret is enforced. The CLI is built once from its Go module (infra/compose-check.sh).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '@switchyard/shared/testing/index.ts';

t.test('docker compose config accepts docker-compose.yml and requires every secret', async (t) => {
  const r = spawnSync('bash', [join(ROOT, 'infra/compose-check.sh')], { encoding: 'utf8', timeout: 15 * 60_000 });
  t.equal(r.status, 0, `compose-check exited ${r.status}:\n${r.stderr.slice(-2000)}`);
  t.match(r.stderr, /ok: docker-compose\.yml is valid/);
  t.match(r.stderr, /ok: each of API_KEY API_JWT_SECRET AES_ENCRYPTION_SECRET POSTGRES_PASSWORD is required/);
});

t.test('every service command in docker-compose.yml and the Dockerfile names a file the build emits', async (t) => {
  const compose = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const commands = [...compose.matchAll(/command: \["node", "([^"]+)"\]/g), ...dockerfile.matchAll(/CMD \["node", "([^"]+)"\]/g)].map(
    (m) => m[1] as string,
  );
  t.ok(commands.length >= 6, `${commands.length} commands`);
  for (const c of commands) {
    t.match(c, /^dist\/.+\.js$/, `${c} runs the built tree`);
    const source = join(ROOT, c.replace(/^dist\//, '').replace(/\.js$/, '.ts'));
    t.ok(existsSync(source), `${c} is built from ${source.slice(ROOT.length)}`);
  }
});
