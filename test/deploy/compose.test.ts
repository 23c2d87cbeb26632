// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are compose interpolation syntax
// docker-compose.yml against the Compose Specification's JSON Schema (the copy the dclint package
// ships, node_modules/dclint/schemas/compose.schema.json), after the interpolation compose does, and
// each required secret enforced by its ${NAME:?message} guard. No Docker and no compose CLI needed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import t from 'tap';
import { parse } from 'yaml';
import { ROOT } from '@switchyard/shared/testing/index.ts';

const REQUIRED = ['API_KEY', 'API_JWT_SECRET', 'AES_ENCRYPTION_SECRET', 'POSTGRES_PASSWORD'];
const DUMMIES = Object.fromEntries(REQUIRED.map((v) => [v, `dummy-${v}`]));

/**
 * Compose's interpolation of one string: $$ is a literal $; ${NAME}, $NAME; ${NAME:-default} and
 * ${NAME-default}; ${NAME:?message} and ${NAME?message} throw (the colon forms also when empty);
 * ${NAME:+alt} and ${NAME+alt}. Defaults may hold further ${...}.
 */
export function interpolate(text: string, env: Record<string, string | undefined>): string {
  let out = '';
  for (let i = 0; i < text.length; ) {
    if (text[i] !== '$') {
      out += text[i++];
      continue;
    }
    const next = text[i + 1];
    if (next === '$') {
      out += '$';
      i += 2;
    } else if (next === '{') {
      let depth = 1;
      let j = i + 2;
      for (; j < text.length && depth; j++) depth += text[j] === '{' ? 1 : text[j] === '}' ? -1 : 0;
      if (depth) throw new Error(`unclosed \${ in ${text}`);
      const body = text.slice(i + 2, j - 1);
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?+])([\s\S]*))?$/.exec(body);
      if (!m) throw new Error(`invalid interpolation \${${body}}`);
      const [, name = '', colon, op, arg = ''] = m;
      const value = env[name];
      const unset = value === undefined || (colon === ':' && value === '');
      if (op === '-') out += unset ? interpolate(arg, env) : value;
      else if (op === '?') {
        if (unset) throw new Error(`required variable ${name} is missing a value: ${arg}`);
        out += value;
      } else if (op === '+') out += unset ? '' : interpolate(arg, env);
      else out += value ?? '';
      i = j;
    } else {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i + 1));
      if (!m) {
        out += '$';
        i++;
        continue;
      }
      out += env[m[0]] ?? '';
      i += 1 + m[0].length;
    }
  }
  return out;
}

/** Interpolates every string of a parsed document (compose interpolates values, not keys). */
const interpolateAll = (v: unknown, env: Record<string, string | undefined>): unknown =>
  typeof v === 'string'
    ? interpolate(v, env)
    : Array.isArray(v)
      ? v.map((x) => interpolateAll(x, env))
      : v && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolateAll(x, env)]))
        : v;

const file = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
// merge: YAML merge keys (<<: *anchor), which compose supports and this file uses.
const doc = parse(file, { merge: true }) as Record<string, unknown>;
const { $schema: draft, ...schema } = JSON.parse(readFileSync(join(ROOT, 'node_modules/dclint/schemas/compose.schema.json'), 'utf8'));
// Draft 7, Ajv's default; the file names it by an https URL Ajv does not register, so it is dropped.
// strict off: the specification uses annotations Ajv does not know (deprecated, x- patterns).
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

t.test('the interpolation follows compose', async (t) => {
  t.match(draft, /draft-07/, 'the schema is draft 7');
  const env = { A: 'a', E: '' };
  t.equal(interpolate('$$A ${A} $A ${B:-b} ${E:-e} ${E-e} ${B:-${A}} ${A:+x} ${B+y}', env), '$A a a b e  a x ');
  t.throws(() => interpolate('${B:?set B}', env), /B is missing a value: set B/);
  t.throws(() => interpolate('${E:?set E}', env), /E is missing/, 'empty counts as missing with the colon');
  t.equal(interpolate('${E?set E}', env), '', 'and not without it');
});

t.test('docker-compose.yml is valid against the Compose Specification schema', async (t) => {
  const resolved = interpolateAll(doc, DUMMIES);
  const ok = validate(resolved);
  t.ok(ok, `schema errors: ${JSON.stringify(validate.errors?.slice(0, 5), null, 1)}`);
  t.equal(typeof (resolved as { name?: unknown }).name, 'string', 'the project is named');
  const services = Object.keys((resolved as { services: object }).services);
  for (const s of ['kafka', 'postgres', 'migrate', 'gateway', 'router', 'sender', 'attempts']) t.ok(services.includes(s), `service ${s}`);

  // The check can fail: a misspelt service key is refused.
  const broken = structuredClone(resolved) as { services: Record<string, Record<string, unknown>> };
  (broken.services.gateway as Record<string, unknown>).comand = ['node'];
  t.notOk(validate(broken), 'an unknown service key is rejected');
});

t.test('each required secret is enforced by its guard, and named when missing', async (t) => {
  for (const missing of REQUIRED) {
    const env = { ...DUMMIES, [missing]: undefined };
    t.throws(() => interpolateAll(doc, env), new RegExp(`${missing} is missing a value`), `${missing} unset`);
    t.throws(() => interpolateAll(doc, { ...env, [missing]: '' }), new RegExp(`${missing} is missing a value`), `${missing} empty`);
  }
  t.doesNotThrow(() => interpolateAll(doc, DUMMIES), 'all set: accepted');
});

t.test('every service command in docker-compose.yml and the Dockerfile names a file the build emits', async (t) => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const commands = [...file.matchAll(/command: \["node", "([^"]+)"\]/g), ...dockerfile.matchAll(/CMD \["node", "([^"]+)"\]/g)].map(
    (m) => m[1] as string,
  );
  t.ok(commands.length >= 6, `${commands.length} commands`);
  for (const c of commands) {
    t.match(c, /^dist\/.+\.js$/, `${c} runs the built tree`);
    const source = join(ROOT, c.replace(/^dist\//, '').replace(/\.js$/, '.ts'));
    t.ok(readFileSync(source, 'utf8').length > 0, `${c} is built from ${source.slice(ROOT.length)}`);
  }
});

t.test('the services replicate topics as the single broker allows', async (t) => {
  const resolved = interpolateAll(doc, DUMMIES) as { services: Record<string, { environment?: Record<string, unknown> }> };
  const brokers = Object.keys(resolved.services).filter((s) => /^kafka/.test(s)).length;
  const rf = Number(resolved.services.gateway?.environment?.KAFKA_REPLICATION_FACTOR);
  const isr = Number(resolved.services.gateway?.environment?.KAFKA_MIN_INSYNC_REPLICAS);
  t.ok(rf >= 1 && rf <= brokers, `replication factor ${rf} within the ${brokers} broker(s)`);
  t.ok(isr >= 1 && isr <= rf, `min.insync.replicas ${isr} within the replication factor`);
  for (const s of ['router', 'sender', 'attempts'])
    t.equal(resolved.services[s]?.environment?.KAFKA_REPLICATION_FACTOR, String(rf), `${s} creates topics the same way`);
});
