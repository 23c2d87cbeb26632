import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError, errorBody, type Problem } from '@switchyard/shared/errors.ts';

/** ajv errors from route schemas, as problems with a field path like `body.topics[0]`. */
function problemsOf(err: FastifyError): Problem[] {
  // `query`, as the route guards name a query parameter (fastify says `querystring`).
  const where = err.validationContext === 'querystring' ? 'query' : (err.validationContext ?? 'body');
  return (err.validation ?? []).map((v) => {
    const base = v.instancePath
      .split('/')
      .filter(Boolean)
      .map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`))
      .join('');
    const params = v.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[] };
    if (v.keyword === 'required') return { path: `${where}${base}.${params.missingProperty}`, message: 'is required' };
    if (v.keyword === 'additionalProperties') return { path: `${where}${base}.${params.additionalProperty}`, message: 'is not allowed' };
    if (v.keyword === 'enum') return { path: `${where}${base}`, message: `must be one of ${(params.allowedValues ?? []).join(', ')}` };
    return { path: `${where}${base}`, message: v.message ?? 'is invalid' };
  });
}

/** Postgres connection errors (SQLSTATE class 08, shutdown 57P01-57P03) and socket errors. */
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', '57P01', '57P02', '57P03']);

/** The database or Kafka could not be reached: nothing the caller did wrong, worth retrying. */
function unavailable(err: Error): boolean {
  const e = err as Error & { code?: unknown; name: string };
  const code = typeof e.code === 'string' ? e.code : '';
  return (
    UNAVAILABLE_CODES.has(code) ||
    code.startsWith('08') ||
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
