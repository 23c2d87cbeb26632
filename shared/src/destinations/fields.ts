import type { Problem } from '../errors.ts';

/**
 * A field of a destination type's config or credentials, declared as data. The same declaration
 * validates create and PATCH bodies, masks sensitive values and is served by /destination-types
 * (which the portal renders as a form).
 */
export interface FieldDef {
  key: string;
  type: 'text' | 'checkbox' | 'key_value_map' | 'select';
  label: string;
  description: string;
  required: boolean;
  sensitive?: boolean;
  default?: string;
  minlength?: number;
  maxlength?: number;
  /** A regular expression the whole value must match. */
  pattern?: string;
  /**
   * `address`: the value names a peer the sender connects to, a URL or comma-separated host:port
   * entries (the pattern says which). Checked beyond the pattern as the sender reads it: a URL must
   * parse, every port must be 1-65535. Not served: the pattern is the form's rule.
   */
  format?: 'address';
  options?: { label: string; value: string }[];
  /** Accepted on input but never returned or shown in forms (webhook rotate_secret). */
  writeOnly?: boolean;
  /** Only the admin credential may set it (webhook secrets). */
  adminOnly?: boolean;
}

export function validateFields(fields: readonly FieldDef[], input: Record<string, unknown>, at: string): Problem[] {
  const problems: Problem[] = [];
  const known = new Set(fields.map((f) => f.key));
  for (const key of Object.keys(input)) {
    if (!known.has(key)) problems.push({ path: `${at}.${key}`, message: 'is not a field of this destination type' });
  }
  for (const f of fields) {
    const v = input[f.key];
    const path = `${at}.${f.key}`;
    if (v === undefined || v === null || v === '') {
      if (f.required) problems.push({ path, message: 'is required' });
      continue;
    }
    switch (f.type) {
      case 'checkbox':
        if (typeof v !== 'boolean' && v !== 'true' && v !== 'false') problems.push({ path, message: 'must be a boolean' });
        break;
      case 'key_value_map':
        if (typeof v !== 'object' || Array.isArray(v) || Object.values(v as object).some((x) => typeof x !== 'string')) {
          problems.push({ path, message: 'must be an object of string values' });
        }
        break;
      default: {
        if (typeof v !== 'string') {
          problems.push({ path, message: 'must be a string' });
          break;
        }
        if (f.minlength !== undefined && v.length < f.minlength)
          problems.push({ path, message: `must be at least ${f.minlength} characters` });
        if (f.maxlength !== undefined && v.length > f.maxlength)
          problems.push({ path, message: `must be at most ${f.maxlength} characters` });
        if (f.pattern && !new RegExp(`^(?:${f.pattern})$`).test(v)) problems.push({ path, message: `must match ${f.pattern}` });
        else if (f.format === 'address') {
          const problem = addressProblem(v);
          if (problem) problems.push({ path, message: problem });
        }
        if (f.type === 'select' && f.options && !f.options.some((o) => o.value === v)) {
          problems.push({ path, message: `must be one of ${f.options.map((o) => o.value).join(', ')}` });
        }
      }
    }
  }
  return problems;
}

/**
 * Why a peer's address could never be connected to, or undefined. A pattern takes `http://[::1` or
 * `host:99999`; every delivery would then fail, so the address is refused when it is saved.
 */
function addressProblem(v: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(v)) {
    if (!URL.canParse(v)) return 'is not a valid URL';
    return new URL(v).port === '0' ? 'must have a port from 1 to 65535' : undefined;
  }
  for (const entry of v.split(',')) {
    const port = /:(\d+)\s*$/.exec(entry)?.[1];
    if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return 'must have a port from 1 to 65535';
  }
  return undefined;
}

/** Sensitive values show a short prefix followed by asterisks. */
export function mask(value: unknown): string {
  const s = typeof value === 'string' ? value : JSON.stringify(value);
  const keep = s.length >= 12 ? 4 : s.length >= 6 ? 2 : 0;
  return `${s.slice(0, keep)}${'*'.repeat(Math.max(8, Math.min(s.length - keep, 16)))}`;
}

export function maskFields(fields: readonly FieldDef[], values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) {
    const f = fields.find((x) => x.key === k);
    if (f?.writeOnly) continue;
    Object.defineProperty(out, k, {
      value: f?.sensitive && v !== null && v !== undefined && v !== '' ? mask(v) : v,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return out;
}
