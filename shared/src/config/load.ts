import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { Ajv, type ErrorObject } from 'ajv';
import { type Config, type SettingName, SETTINGS, settingsOf } from './catalogue.ts';
import type { Setting } from './setting.ts';

/**
 * Reading the configuration: each value parsed by its catalogue entry (catalogue.ts), every problem
 * reported at once, on one line, never echoing a value (some settings are secrets).
 */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  readonly retryable = false;
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    // One line, whatever the number of problems: it is what a failed start prints (shared/src/process.ts).
    super(`invalid configuration: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

const ajv = new Ajv({ allErrors: true, coerceTypes: false });

/** How every list setting is read: comma separated, each entry trimmed, empty entries dropped. */
export function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
}

function toValue(name: string, s: Setting, raw: string, problems: string[]): unknown {
  switch (s.kind) {
    case 'integer':
      return /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw;
    case 'boolean': {
      const v = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(v)) return true;
      if (['false', '0', 'no', 'off', ''].includes(v)) return false;
      return raw;
    }
    case 'list':
      return splitList(raw);
    case 'integer-list':
      return splitList(raw).map((x) => {
        if (!/^\d+$/.test(x)) problems.push(`${name}: "${x}" is not a whole number of seconds`);
        return Number(x);
      });
    default:
      return raw;
  }
}

function jsonSchemaOf(s: Setting): object {
  switch (s.kind) {
    case 'integer':
      return { type: 'integer', minimum: s.minimum, maximum: s.maximum };
    case 'boolean':
      return { type: 'boolean' };
    case 'list':
      return { type: 'array', items: s.enum ? { type: 'string', enum: s.enum } : { type: 'string' } };
    case 'integer-list':
      return { type: 'array', items: { type: 'integer', minimum: 0 } };
    default:
      return s.enum ? { type: 'string', enum: s.enum } : { type: 'string', minLength: s.required ? 1 : 0 };
  }
}

const schemaOf = (names: readonly string[]) => ({
  type: 'object',
  properties: Object.fromEntries(names.map((k) => [k, jsonSchemaOf((SETTINGS as Record<string, Setting>)[k] as Setting)])),
  required: names.filter((k) => (SETTINGS as Record<string, Setting>)[k]?.required),
});
const validateAll = ajv.compile(schemaOf(Object.keys(SETTINGS)));

function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

function isPostgresUrl(v: string): boolean {
  const m = /^postgres(ql)?:\/\/([^@/?#]*@)?/.exec(v);
  if (!m) return false;
  // An empty host (a Unix socket named by ?host=) is valid for node-postgres though not for URL.
  const rest = v.slice(m[0].length);
  try {
    new URL(`postgres://${m[2] ?? ''}${/^[/?#]|^$/.test(rest) ? 'localhost' : ''}${rest}`);
    return true;
  } catch {
    return false;
  }
}

function isOrigin(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === v;
  } catch {
    return false;
  }
}

/** host:port, the host a name, an IPv4 address or a bracketed IPv6 address, the port 1-65535. */
export function isHostPort(v: string): boolean {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/.exec(v);
  return m !== null && Number(m[3]) >= 1 && Number(m[3]) <= 65535;
}

/** A host to listen on: an IPv4 or IPv6 address (unbracketed, as listen takes it) or a host name. */
export function isListenHost(v: string): boolean {
  return isIP(v) !== 0 || /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(v);
}

/** The problems of the values that have the type their schema asks for: syntax and length. */
function checkValues(name: string, s: Setting, value: unknown, problems: string[]): void {
  if (typeof value === 'string' && value !== '') {
    if (s.minLength !== undefined && value.length < s.minLength) {
      problems.push(`${name}: must be at least ${s.minLength} characters (for example: openssl rand -base64 32)`);
    }
    if (s.format === 'http-url' && !isHttpUrl(value)) problems.push(`${name}: must be an absolute http:// or https:// URL`);
    if (s.format === 'listen-host' && !isListenHost(value)) {
      problems.push(`${name}: must be an address or host name of this host, such as 127.0.0.1, 0.0.0.0 or ::`);
    }
    if (s.format === 'postgres-url' && !isPostgresUrl(value)) {
      problems.push(`${name}: must be a postgres:// (or postgresql://) URL, such as postgres://user:password@host:5432/database`);
    }
  }
  if (s.format === 'host-port' && Array.isArray(value)) {
    // Broker addresses are not secret: the entry is named so it can be found.
    for (const entry of value as string[]) {
      if (!isHostPort(entry)) problems.push(`${name}: "${entry}" is not host:port (a port from 1 to 65535)`);
    }
  }
  if (s.format === 'origin' && Array.isArray(value)) {
    // A browser sends its origin exactly so (no path, no trailing slash): anything else never matches.
    for (const entry of value as string[]) {
      if (entry !== '*' && !isOrigin(entry)) problems.push(`${name}: "${entry}" is not an origin (scheme://host[:port], or *)`);
    }
  }
}

/** Rules between settings, checked where both are read (each valid on its own). */
function checkTogether(values: Record<string, unknown>, problems: string[]): void {
  const { KAFKA_MIN_INSYNC_REPLICAS: minIsr, KAFKA_REPLICATION_FACTOR: rf } = values;
  if (typeof minIsr === 'number' && typeof rf === 'number' && minIsr > rf)
    problems.push(
      `KAFKA_MIN_INSYNC_REPLICAS: ${minIsr} is above KAFKA_REPLICATION_FACTOR (${rf}), so no write could ever be accepted; at most ${rf} (a single broker: both 1)`,
    );
  const { OPERATOR_CALLBACK_URL: callback, OPERATOR_CALLBACK_SECRET: callbackSecret } = values;
  if (typeof callback === 'string' && callback !== '' && callbackSecret === '')
    problems.push(
      'OPERATOR_CALLBACK_SECRET: is required when OPERATOR_CALLBACK_URL is set (callbacks are signed with it: signed with an empty key, anyone could forge one)',
    );
}

/**
 * NODE_EXTRA_CA_CERTS is Node's, not ours, but a deployment sets it beside ours (docs/operations.md,
 * "Private CAs"). Node reads the file when the first TLS context is made (at start: modules make one
 * as they load) and, when it cannot, writes a plain-text warning and goes on without it: every
 * delivery to a receiver its CA signed would then fail. So a file that cannot be read, or holds no
 * certificate, is refused at start like a bad setting.
 */
function checkExtraCertificates(path: string | undefined, problems: string[]): void {
  if (!path) return;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    problems.push(`NODE_EXTRA_CA_CERTS: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    return;
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) problems.push(`NODE_EXTRA_CA_CERTS: ${path} holds no PEM certificate`);
}

/**
 * Reads, validates and freezes the configuration. Reports every problem at once. With `names`, reads
 * only those settings (a command that needs a few, such as npm run migrate, needs nothing else set).
 */
export function loadConfig(env?: Record<string, string | undefined>): Config;
export function loadConfig<K extends SettingName>(env: Record<string, string | undefined>, names: readonly K[]): Pick<Config, K>;
export function loadConfig(env: Record<string, string | undefined> = process.env, names?: readonly SettingName[]): Partial<Config> {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  const entries = (Object.entries(SETTINGS) as [string, Setting][]).filter(([name]) => !names || names.includes(name as SettingName));
  for (const [name, s] of entries) {
    const raw = env[name] ?? s.default;
    if (raw === undefined) continue;
    values[name] = toValue(name, s, raw, problems);
  }
  const validate = names ? ajv.compile(schemaOf(names)) : validateAll;
  if (!validate(values)) {
    // A value its parse already refused (an entry of a list of numbers) is named once, by the parse.
    const parsed = new Set(problems.map((p) => p.slice(0, p.indexOf(':'))));
    for (const e of validate.errors as ErrorObject[]) {
      const name = e.instancePath.split('/')[1] ?? (e.params as { missingProperty?: string }).missingProperty ?? '';
      if (parsed.has(name)) continue;
      // Values are never echoed: some settings are secrets. The allowed ones come from the catalogue.
      const message =
        // A required string set empty (as a template's `API_KEY=` leaves it) is as good as missing.
        e.keyword === 'required' || (e.keyword === 'minLength' && values[name] === '')
          ? 'is required'
          : e.keyword === 'enum'
            ? `must be one of ${(e.params as { allowedValues: string[] }).allowedValues.map((v) => (v === '' ? '"" (empty)' : v)).join(', ')}`
            : e.message;
      problems.push(`${name}: ${message}`);
    }
  }
  for (const [name, s] of entries) checkValues(name, s, values[name], problems);
  checkTogether(values, problems);
  checkExtraCertificates(env.NODE_EXTRA_CA_CERTS, problems);
  if (problems.length) throw new ConfigError([...new Set(problems)]);
  return Object.freeze(values) as Partial<Config>;
}

/** A printable copy of the configuration with secrets masked. */
export function describeConfig(config: Config): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, (SETTINGS as Record<string, Setting>)[k]?.secret ? '********' : v]));
}

/**
 * The configuration of one process (createRuntime): the settings of the sections it reads
 * (catalogue.ts, SERVICE_SECTIONS), so a gateway needs no sender setting set and never refuses one;
 * embedded mode's is every setting. Typed as the whole Config so the code services share compiles
 * unchanged: reading a setting outside the process's sections is a programming error and throws,
 * naming the setting, rather than yielding undefined.
 */
export function loadServiceConfig(service: string, env: Record<string, string | undefined> = process.env): Config {
  const names = settingsOf(service);
  const values = loadConfig(env, names);
  const guarded: Record<string, unknown> = { ...values };
  for (const name of Object.keys(SETTINGS)) {
    if (names.includes(name as SettingName)) continue;
    Object.defineProperty(guarded, name, {
      enumerable: false,
      get() {
        throw new Error(`${name} is not a setting the ${service} reads: add it to its sections (shared/src/config/catalogue.ts)`);
      },
    });
  }
  return Object.freeze(guarded) as Config;
}
