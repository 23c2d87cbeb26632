import type { FastifyError, FastifyInstance } from 'fastify';
import type { ErrorObject } from 'ajv';
import { AppError, errorBody, type Problem } from '@switchyard/shared/errors.ts';

/** What a JSON value is, for a message: `null`, `a number`, `an array`. */
const kindOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  boolean: 'a boolean',
  integer: 'an integer',
  number: 'a number',
  null: 'null',
  object: 'an object',
  array: 'an array',
};
const typeWords = (type: unknown) =>
  [type]
    .flat()
    .map((t) => TYPE_WORDS[String(t)] ?? String(t))
    .join(' or ');

/** Whether a value is of a schema's type (a schema without one takes any). */
function admits(type: unknown, value: unknown): boolean {
  if (type === undefined) return true;
  const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  return [type].flat().some((t) => t === kind || (t === 'integer' && Number.isInteger(value)));
}

type Form = { type?: unknown; const?: unknown; items?: { type?: unknown }; minItems?: number };
/** One form an anyOf admits, for a message: `"*"`, `a non-empty array of strings`. */
function formWords(f: Form): string {
  if ('const' in f) return JSON.stringify(f.const);
  if (f.type === 'array' && f.items?.type !== undefined) {
    const items = [f.items.type].flat().join(' or ');
    return `${f.minItems === 1 ? 'a non-empty array' : 'an array'} of ${items}s`;
  }
  return typeWords(f.type);
}

/**
 * An anyOf (topics: "*" or a list) is one problem, not one per form: a value that fits one form by
 * its type (a list) is told what is wrong inside it (`topics[0] must be a string`); any other,
 * which forms it may take. Needs the value (a body's errors carry it: validators.ts).
 */
function sayAnyOfOnce(errors: ErrorObject[]): { errors: ErrorObject[]; said: Map<ErrorObject, string> } {
  let out = errors;
  const said = new Map<ErrorObject, string>();
  for (const e of errors) {
    if ((e.keyword !== 'anyOf' && e.keyword !== 'oneOf') || !Array.isArray(e.schema) || !('data' in e)) continue;
    const forms = e.schema as Form[];
    const inForm = (x: ErrorObject, i: number) => x.schemaPath.startsWith(`${e.schemaPath}/${i}/`);
    const inAny = (x: ErrorObject) => x.schemaPath.startsWith(`${e.schemaPath}/`);
    const fitting = forms.flatMap((f, i) => (admits(f.type, e.data) ? [i] : []));
    const only = fitting.length === 1 ? (fitting[0] as number) : -1;
    if (only >= 0 && out.every((x) => !inForm(x, only) || x.instancePath !== e.instancePath)) {
      out = out.filter((x) => x !== e && (!inAny(x) || inForm(x, only)));
    } else {
      out = out.filter((x) => !inAny(x));
      said.set(e, `must be ${forms.map(formWords).join(' or ')}${fitting.length ? '' : `, not ${kindOf(e.data)}`}`);
    }
  }
  return { errors: out, said };
}

/** ajv errors as problems with a field path like `body.topics[0]`; `where`: the path's start. */
export function ajvProblems(all: readonly ErrorObject[], where: string): Problem[] {
  const { errors, said } = sayAnyOfOnce([...all]);
  // A value of the wrong type is named once, for its type (not also for the enum it cannot match).
  const mistyped = new Set(errors.filter((v) => v.keyword === 'type').map((v) => v.instancePath));
  return errors
    .filter((v) => v.keyword === 'type' || !mistyped.has(v.instancePath))
    .map((v) => {
      const base = v.instancePath
        .split('/')
        .filter(Boolean)
        .map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`))
        .join('');
      const params = v.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[]; type?: unknown };
      if (v.keyword === 'required') return { path: `${where}${base}.${params.missingProperty}`, message: 'is required' };
      if (v.keyword === 'additionalProperties') return { path: `${where}${base}.${params.additionalProperty}`, message: 'is not allowed' };
      if (v.keyword === 'enum') return { path: `${where}${base}`, message: `must be one of ${(params.allowedValues ?? []).join(', ')}` };
      // `must be an integer, not a boolean`: what was sent, where the error carries it (a body's).
      if (v.keyword === 'type')
        return { path: `${where}${base}`, message: `must be ${typeWords(params.type)}${'data' in v ? `, not ${kindOf(v.data)}` : ''}` };
      return { path: `${where}${base}`, message: said.get(v) ?? v.message ?? 'is invalid' };
    });
}

/** ajv errors from route schemas, as problems. */
function problemsOf(err: FastifyError): Problem[] {
  // `query`, as the route guards name a query parameter (fastify says `querystring`).
  const where = err.validationContext === 'querystring' ? 'query' : (err.validationContext ?? 'body');
  return ajvProblems((err.validation ?? []) as unknown as ErrorObject[], where);
}

/**
 * Postgres connection errors (SQLSTATE class 08, shutdown 57P01-57P03, insufficient resources class
 * 53: a full disk, out of memory) and socket errors.
 */
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', '57P01', '57P02', '57P03']);

/** The database or Kafka could not be reached: nothing the caller did wrong, worth retrying. */
function unavailable(err: Error): boolean {
  const e = err as Error & { code?: unknown; name: string };
  const code = typeof e.code === 'string' ? e.code : '';
  return (
    UNAVAILABLE_CODES.has(code) ||
    code.startsWith('08') ||
    code.startsWith('53') ||
    e.name === 'KnexTimeoutError' ||
    e.name.startsWith('KafkaJS') ||
    /Connection terminated|connection is closed/i.test(e.message)
  );
}

/** Maps every error to the one documented shape; unknown errors become a generic 500, logged with cause. */
export function toAppError(err: FastifyError | Error): AppError {
  if (err instanceof AppError) return err;
  if (unavailable(err))
    return new AppError('SERVICE_UNAVAILABLE', 'The database or Kafka is unavailable right now. Retry shortly.', undefined, { cause: err });
  const e = err as FastifyError;
  if (e.validation) return AppError.validation(problemsOf(e));
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('INVALID_JSON', e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'The request body is empty.' : undefined);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('UNSUPPORTED_MEDIA_TYPE');
  }
  if (err instanceof SyntaxError || e.statusCode === 400) return new AppError('BAD_REQUEST');
  if (e.statusCode === 413) return new AppError('PAYLOAD_TOO_LARGE');
  return new AppError('INTERNAL', undefined, undefined, { cause: err });
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, req, reply) => {
    const appErr = toAppError(err as FastifyError);
    if (appErr.code === 'INTERNAL') req.log.error({ err }, 'unhandled error');
    else if (appErr.status >= 500) req.log.warn({ err: appErr, cause: appErr.cause }, appErr.message);
    // Every 503 says when to come back.
    if (appErr.status === 503 && !reply.hasHeader('retry-after')) void reply.header('retry-after', '5');
    void reply.status(appErr.status).send(errorBody(appErr));
  });
}
