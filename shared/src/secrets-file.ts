// Secrets generated once and kept in a local file: embedded mode's DATA_DIR/secrets.env
// (services/embedded/src/setup.ts) and the development stack's .tools/dev-secrets.env
// (infra/dev/start.ts). A deployment supplies its own; these are for a machine of one's own.
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** Secrets a deployment must supply, and that a secrets file generates when they are missing. */
export const GENERATED_SECRETS = ['API_KEY', 'API_JWT_SECRET', 'AES_ENCRYPTION_SECRET'] as const;

export interface SecretsFileOptions {
  /** Names supplied elsewhere (the environment): not generated when missing from the file. */
  supplied?: (name: string) => boolean;
  /** Comment lines written at the top of the file (each starting with '#'). */
  header?: string[];
}

/** The NAME=value lines of an env file (comments and blank lines skipped); empty when it is missing. */
export function readEnvFile(path: string): Record<string, string> {
  if (!existsSync(path)) return {};
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const i = line.indexOf('=');
    if (i > 0 && !line.startsWith('#')) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

/**
 * Reads `file` and generates each secret of GENERATED_SECRETS it lacks (24 random bytes, base64url)
 * unless `supplied` says it comes from elsewhere. When any was generated, the file is rewritten with
 * every entry it had plus the new ones, and created (with its directory) mode 0600. Returns every
 * entry of the file and the names generated now.
 */
export function loadSecretsFile(file: string, opts: SecretsFileOptions = {}): { values: Record<string, string>; generated: string[] } {
  const values = readEnvFile(file);
  const generated: string[] = [];
  for (const name of GENERATED_SECRETS) {
    if (values[name] || opts.supplied?.(name)) continue;
    values[name] = randomBytes(24).toString('base64url');
    generated.push(name);
  }
  if (generated.length) {
    mkdirSync(dirname(file), { recursive: true });
    const lines = [...(opts.header ?? []), ...Object.entries(values).map(([k, v]) => `${k}=${v}`)];
    writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  }
  return { values, generated };
}

/**
 * Replaces `file` with `values` (mode 0600), keeping its comment lines: written to a temporary file,
 * fsync'd, then renamed over it, so a crash leaves the old file or the new one, never half of one.
 */
export function writeSecretsFile(file: string, values: Record<string, string>): void {
  const comments = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('#'))
    : [];
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${[...comments, ...Object.entries(values).map(([k, v]) => `${k}=${v}`)].join('\n')}\n`, { mode: 0o600 });
  const fd = openSync(tmp, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}
