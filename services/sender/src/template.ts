/**
 * Templates of the kinesis partition key and the s3 object key: JMESPath expressions
 * (@jmespath-community/jmespath: maintained, typed, no dependencies, the community specification's
 * functions) over what contract-details.md names for each type. Compiled once per client; an
 * expression that does not compile can never work (invalid_config), one that gives nothing for an
 * event refuses that event (rejected).
 */
import { compile, type JSONValue, TreeInterpreter } from '@jmespath-community/jmespath';
import type { EventRecord } from '@switchyard/shared/model/index.ts';
import { failed, type Outcome } from './sender.ts';

export type Evaluate = (input: JSONValue) => string | Outcome;

/**
 * Compiles `expression` for the field `field`: an evaluator giving a non-empty string (numbers and
 * booleans as their JSON text), or the failure of this event; or the failure of the destination
 * when the expression does not compile.
 */
export function compileTemplate(field: string, expression: string): Evaluate | Outcome {
  let ast: ReturnType<typeof compile>;
  try {
    ast = compile(expression);
  } catch (err) {
    return failed('invalid_config', `${field} is not a JMESPath expression: ${(err as Error).message}`);
  }
  return (input) => {
    let v: JSONValue;
    try {
      v = TreeInterpreter.search(ast, input);
    } catch (err) {
      return failed('rejected', `${field} failed for this event: ${(err as Error).message}`);
    }
    const s = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? JSON.stringify(v) : '';
    return s !== '' ? s : failed('rejected', `${field} gave ${v === null ? 'null' : `no string (${JSON.stringify(v)})`} for this event`);
  };
}

export const isOutcome = (v: unknown): v is Outcome => typeof v === 'object' && v !== null && 'status' in v;

/** RFC 3339 with nanoseconds, in UTC: 2026-11-22T10:00:00.123000000Z (JavaScript keeps milliseconds). */
export function rfc3339Nano(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 19)}.${String(d.getUTCMilliseconds()).padStart(3, '0')}000000Z`;
}

/** The input of an s3 key template: {data, metadata, time: {rfc3339_nano, unix}}, time being the event's. */
export function s3TemplateInput(event: EventRecord, metadata: Record<string, string>): JSONValue {
  const ms = Date.parse(event.time);
  return {
    data: event.data as JSONValue,
    metadata,
    time: { rfc3339_nano: rfc3339Nano(event.time), unix: Number.isNaN(ms) ? 0 : Math.floor(ms / 1000) },
  };
}
