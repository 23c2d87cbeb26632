/**
 * What can be stored. Postgres text and jsonb hold neither U+0000 nor a lone UTF-16 surrogate
 * (`\ud800` without its pair), and JSON nested without bound only ever overflows a stack somewhere
 * (ours, a client's, Postgres's `max_stack_depth`). So the same rule is applied at every gate: the
 * gateway answers 422 with the field path, the router dead-letters a record written straight into
 * Kafka, and ids keep to ID_PATTERN. docs/architecture.md ("Poison records") has the whole rule.
 */
import type { Problem } from '../errors.ts';

/** Deepest nesting of objects and arrays accepted in any JSON value (the top level is depth 1). */
export const MAX_JSON_DEPTH = 64;

/**
 * Tenant, destination and event ids: letters, digits and `_ . : @ ~ + = -`, starting with a letter,
 * digit or `_` (so never `.` or `..`), 1 to 255 characters. UUIDs, `acme`, `tenant_1`,
 * `user.created-42` and ids derived by the router (`kafka-0-17`) all fit.
 */
export const ID_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.:@~+=-]{0,254}$';
const ID_RE = new RegExp(ID_PATTERN);

export const ID_RULE = 'must be 1-255 characters of A-Z a-z 0-9 _ . : @ ~ + = -, starting with a letter, a digit or _';

export function isValidId(id: string): boolean {
  return ID_RE.test(id);
}

/** Why a string cannot be stored, or null when it can. */
export function badString(s: string): string | null {
  if (s.includes('\u0000')) return 'contains U+0000 (NUL), which cannot be stored';
  if (!s.isWellFormed()) return 'contains a lone UTF-16 surrogate, which cannot be stored';
  return null;
}

const plainKey = /^[A-Za-z_$][\w$-]*$/;
const child = (path: string, key: string) => (plainKey.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`);

/**
 * The first place in a JSON value that cannot be stored (a string or key with NUL or a lone
 * surrogate, or nesting deeper than MAX_JSON_DEPTH), as a problem with its path; null when all of
 * it can. Walks without recursion, so no depth overflows it.
 */
export function unstorable(value: unknown, path: string, maxDepth = MAX_JSON_DEPTH): Problem | null {
  const stack: Array<[unknown, string, number]> = [[value, path, 1]];
  while (stack.length) {
    const [v, p, depth] = stack.pop() as [unknown, string, number];
    if (typeof v === 'string') {
      const why = badString(v);
      if (why) return { path: p, message: why };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth > maxDepth) return { path: p, message: `nests deeper than ${maxDepth} levels of objects and arrays` };
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${p}[${i}]`, depth + 1]);
      continue;
    }
    for (const k of Object.keys(v)) {
      const why = badString(k);
      if (why) return { path: child(p, k), message: `key ${why}` };
      stack.push([(v as Record<string, unknown>)[k], child(p, k), depth + 1]);
    }
  }
  return null;
}

// JSON.stringify writes U+0000 as \u0000 and a lone surrogate as \udXXX, and never escapes a paired
// one, so such an escape not itself escaped (an odd run of backslashes before it) marks JSON text
// that Postgres refuses.
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/** Whether JSON text made by JSON.stringify holds something unstorable (a quick test of a whole batch). */
export function jsonTextUnstorable(text: string): boolean {
  return UNSTORABLE_ESCAPE.test(text);
}

/**
 * A copy of a JSON value that can be stored: every NUL and lone surrogate in its strings and keys
 * is written as the six characters of its JSON escape (`\u0000`, `\ud800`). Returns the value
 * itself when nothing needed it, and whether anything changed. Nesting is left as it is.
 */
export function escapeUnstorable(value: unknown): { value: unknown; changed: boolean } {
  let changed = false;
  const fix = (s: string) => {
    if (!badString(s)) return s;
    changed = true;
    return s
      .replaceAll('\u0000', '\\u0000')
      .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
  };
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return fix(v);
    if (v === null || typeof v !== 'object' || depth > MAX_JSON_DEPTH * 4) return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    // defineProperty-free: fromEntries creates own data properties, so a `__proto__` key stays a key.
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [fix(k), walk(x, depth + 1)]));
  };
  const out = walk(value, 1);
  return { value: changed ? out : value, changed };
}
