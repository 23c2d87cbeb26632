import { spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { createLogger, failureRun } from '../src/log.ts';

/** A logger whose lines are collected, parsed. */
function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const line = (i: number): Record<string, unknown> => {
    const l = lines[i];
    if (!l) throw new Error(`no line ${i}: ${JSON.stringify(lines)}`);
    return l;
  };
  return { logger: createLogger('test', 'info', stream), lines, line };
}

t.test('secrets at the top of a line are replaced, other fields kept', async (t) => {
  const { logger, lines, line } = capture();
  logger.info({ credentials: { secret: 's1' }, delivery_metadata: { k: 'v' }, secret: 's2', token: 't1', event_id: 'e1', n: 3 }, 'attempt');
  t.same(lines[0], {
    level: 'info',
    time: line(0).time,
    service: 'test',
    credentials: '[redacted]',
    delivery_metadata: '[redacted]',
    secret: '[redacted]',
    token: '[redacted]',
    event_id: 'e1',
    n: 3,
    msg: 'attempt',
  });
});

t.test('secrets one level down are replaced without touching the logged object', async (t) => {
  const { logger, lines, line } = capture();
  const destination = { id: 'des_1', type: 'webhook', credentials: { secret: 'whsec_x' }, config: { url: 'http://x' } };
  const nested = { secret: 's', other: 1 };
  logger.info({ destination, nested, tags: ['a'], plain: 'text' }, 'route');
  const first = line(0);
  t.same(first.destination, { id: 'des_1', type: 'webhook', credentials: '[redacted]', config: { url: 'http://x' } });
  t.same(first.nested, { secret: '[redacted]', other: 1 });
  t.same(first.tags, ['a']);
  t.equal(first.plain, 'text');
  t.same(destination.credentials, { secret: 'whsec_x' }, 'the caller’s object is unchanged');
  t.equal(nested.secret, 's');
  t.notMatch(JSON.stringify(lines), /whsec_x|"s"/, 'no secret anywhere in the output');
});

t.test('the configuration’s secrets (every setting the catalogue marks secret) and authorization headers are replaced', async (t) => {
  const { logger, line } = capture();
  logger.info({
    config: {
      API_KEY: 'k',
      API_JWT_SECRET: 'j',
      AES_ENCRYPTION_SECRET: 'a',
      DATABASE_URL: 'postgres://u:p@h/db',
      OPERATOR_CALLBACK_SECRET: 'o',
      PORT: 3333,
    },
    headers: { authorization: 'Bearer abc', accept: '*/*' },
    req: { headers: { authorization: 'Bearer def' }, url: '/x' },
  });
  const first = line(0);
  t.same(first.config, {
    API_KEY: '[redacted]',
    API_JWT_SECRET: '[redacted]',
    AES_ENCRYPTION_SECRET: '[redacted]',
    DATABASE_URL: '[redacted]',
    OPERATOR_CALLBACK_SECRET: '[redacted]',
    PORT: 3333,
  });
  t.same(first.headers, { authorization: '[redacted]', accept: '*/*' });
  t.same(first.req, { headers: { authorization: '[redacted]' }, url: '/x' });
});

t.test('an error with a secret property keeps its message and type', async (t) => {
  const { logger, line } = capture();
  const err = Object.assign(new TypeError('boom'), { token: 'tok_1', code: 'E1' });
  logger.error({ err }, 'failed');
  const logged = line(0).err as Record<string, unknown>;
  t.equal(logged.message, 'boom');
  t.equal(logged.type, 'TypeError');
  t.equal(logged.code, 'E1');
  t.equal(logged.token, '[redacted]');
  t.equal(err.token, 'tok_1', 'the error itself is unchanged');
});

t.test('a child logger’s bindings are redacted the same way', async (t) => {
  const { logger, lines, line } = capture();
  logger.child({ destination: { id: 'd', secret: 'child_secret' }, token: 'child_token' }).info('hello');
  t.same(line(0).destination, { id: 'd', secret: '[redacted]' });
  t.equal(line(0).token, '[redacted]');
  logger
    .child({ group: 'g' })
    .child({ destination: { secret: 'grandchild_secret' } })
    .info('again');
  t.same(line(1).destination, { secret: '[redacted]' }, 'a grandchild too');
  t.equal(line(1).group, 'g');
  t.notMatch(JSON.stringify(lines), /child_secret|child_token/);
});

t.test('a line logged to stdout is written before the call returns: a process killed straight after loses none', async (t) => {
  const logModule = fileURLToPath(new URL('../src/log.ts', import.meta.url));
  // 2,000 lines, then SIGKILL from the same tick: nothing queued for later survives a kill.
  const script = `
    const { createLogger } = await import(${JSON.stringify(logModule)});
    const log = createLogger('kill-test');
    for (let i = 0; i < 2000; i++) log.info({ i }, 'attempt');
    process.kill(process.pid, 'SIGKILL');
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  t.equal(r.signal, 'SIGKILL', 'the child was killed, not ended');
  const lines = r.stdout.split('\n').filter(Boolean);
  t.equal(lines.length, 2000, 'every line logged before the kill reached stdout');
  t.same(JSON.parse(lines.at(-1) as string).i, 1999);
});

t.test('a run of failures of a periodic task: one warning, the repeats at debug, one line when it works again', async (t) => {
  const lines: string[] = [];
  const at = (level: string) => (fields: object, msg: string) => lines.push(`${level}: ${msg} ${JSON.stringify(fields)}`);
  const run = failureRun({ info: at('info'), warn: at('warn'), debug: at('debug') }, 'erasing deleted tenants');
  run.worked();
  t.same(lines, [], 'working: nothing to say');
  for (let i = 0; i < 3; i++) run.failed(new Error('connect ECONNREFUSED'));
  run.worked();
  run.worked();
  run.failed(new Error('again'));
  t.same(lines, [
    'warn: erasing deleted tenants failed; retrying on the next run {"err":"connect ECONNREFUSED","failures":1}',
    'debug: erasing deleted tenants failed; retrying on the next run {"err":"connect ECONNREFUSED","failures":2}',
    'debug: erasing deleted tenants failed; retrying on the next run {"err":"connect ECONNREFUSED","failures":3}',
    'info: erasing deleted tenants works again {"failures":3}',
    'warn: erasing deleted tenants failed; retrying on the next run {"err":"again","failures":1}',
  ]);
});
