import type { Problem } from '../errors.ts';

/** The metadata header prefix unless a deployment sets WEBHOOK_HEADER_PREFIX. */
export const DEFAULT_HEADER_PREFIX = 'x-outpost-';

/** Limits of one custom header, checked when a destination is saved. */
export const CUSTOM_HEADER_NAME_MAX = 256;
export const CUSTOM_HEADER_VALUE_MAX = 8192;

/**
 * Header names a destination's custom_headers may not set: the body framing, hop-by-hop headers (undici also
 * refuses several of them), our identification and the Standard Webhooks headers. Names starting with the
 * metadata header prefix are refused as well (see validateCustomHeaders).
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'user-agent',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

/** RFC 9110 token: what a header name may be. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Printable ASCII, space and tab: no CR/LF/NUL (no header injection) and nothing undici would refuse or mangle. */
const FIELD_VALUE = /^[\t\x20-\x7e]*$/;

export function isHeaderName(name: string): boolean {
  return TOKEN.test(name);
}

export function isHeaderValue(value: string): boolean {
  return FIELD_VALUE.test(value);
}

export function isPrefixed(name: string, prefix: string): boolean {
  return prefix !== '' && name.startsWith(prefix);
}

/**
 * Problems of a destination's `config.custom_headers`, for destination validation: an object of string values
 * whose names are HTTP tokens, not reserved (RESERVED_HEADERS), not under the metadata header prefix, unique
 * once lower-cased; values printable ASCII without CR/LF.
 */
export function validateCustomHeaders(
  h: unknown,
  headerPrefix: string = DEFAULT_HEADER_PREFIX,
  path = 'body.config.custom_headers',
): Problem[] {
  if (h === undefined || h === null) return [];
  if (typeof h !== 'object' || Array.isArray(h)) return [{ path, message: 'must be an object of header names to string values' }];
  const prefix = headerPrefix.toLowerCase();
  const problems: Problem[] = [];
  const seen = new Set<string>();
  for (const [key, value] of Object.entries(h as Record<string, unknown>)) {
    const at = `${path}.${key}`;
    const name = key.toLowerCase();
    if (!isHeaderName(key)) problems.push({ path: at, message: 'is not a valid HTTP header name' });
    else if (key.length > CUSTOM_HEADER_NAME_MAX)
      problems.push({ path: at, message: `header name exceeds ${CUSTOM_HEADER_NAME_MAX} characters` });
    else if (RESERVED_HEADERS.has(name)) problems.push({ path: at, message: 'is a reserved header and cannot be set' });
    else if (isPrefixed(name, prefix))
      problems.push({ path: at, message: `names starting with "${prefix}" are reserved for metadata headers` });
    else if (seen.has(name)) problems.push({ path: at, message: 'duplicates another header name (names are case-insensitive)' });
    seen.add(name);
    if (typeof value !== 'string') problems.push({ path: at, message: 'must be a string' });
    else if (!isHeaderValue(value)) problems.push({ path: at, message: 'must contain printable ASCII characters only (no line breaks)' });
    else if (value.length > CUSTOM_HEADER_VALUE_MAX)
      problems.push({ path: at, message: `value exceeds ${CUSTOM_HEADER_VALUE_MAX} characters` });
  }
  return problems;
}
