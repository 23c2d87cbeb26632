// Record values as every adapter of the Bus port writes and reads them: JSON, given as text when a
// producer already has it (one event's JSON into each of its deliveries) instead of serialising the
// same object once per record, and decoded on the way in.
import type { InRecord } from './index.ts';

/** A record value as JSON text, written when its request fills, like any other value. */
export class JsonText {
  readonly write: () => string;

  constructor(write: () => string) {
    this.write = write;
  }
}

/** A record value's JSON: JsonText as written, anything else through JSON.stringify. */
export function jsonOf(value: unknown): string {
  return value instanceof JsonText ? value.write() : JSON.stringify(value);
}

/**
 * `record` as JSON, with the fields named in `shared` written by `json` (which may hand back text it
 * made before for the same object). Parses to what JSON.stringify(record) does; only the order of
 * the fields differs (the shared ones first).
 */
export function spliceJson(record: object, shared: readonly string[], json: (o: object) => string): string {
  const fields = record as Record<string, unknown>;
  const parts: string[] = [];
  for (const k of shared) {
    const v = fields[k];
    if (v !== undefined) parts.push(`${JSON.stringify(k)}:${v !== null && typeof v === 'object' ? json(v) : JSON.stringify(v)}`);
  }
  // The other fields, copied rather than deleted from a copy (`delete` slows the object down).
  const rest: Record<string, unknown> = {};
  for (const k in fields) if (!shared.includes(k)) rest[k] = fields[k];
  const tail = JSON.stringify(rest);
  if (!parts.length) return tail;
  return tail === '{}' ? `{${parts.join(',')}}` : `{${parts.join(',')},${tail.slice(1)}`;
}

/** `json` for spliceJson that writes each object once and hands back the same text after. */
export function jsonOnce(): (o: object) => string {
  const texts = new Map<object, string>();
  return (o) => {
    let s = texts.get(o);
    if (s === undefined) {
      s = JSON.stringify(o);
      texts.set(o, s);
    }
    return s;
  };
}

/**
 * A fetched record with its value decoded as JSON; a value that is not JSON comes as a decode error.
 * With `keepRaw` the value's bytes come along too (ConsumeOptions.keepRaw).
 */
export function decodeRecord<T>(record: Omit<InRecord<T>, 'value'>, value: Buffer | null, keepRaw = false): InRecord<T> {
  try {
    const decoded = JSON.parse(value?.toString('utf8') ?? 'null') as T;
    return keepRaw ? { ...record, value: decoded, raw: value } : { ...record, value: decoded };
  } catch (err) {
    // A bad record must reach the handler (to be dead-lettered), never wedge the partition.
    return { ...record, value: undefined as T, decodeError: (err as Error).message, raw: value };
  }
}
