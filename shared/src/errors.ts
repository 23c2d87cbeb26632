/**
 * The error catalogue. Every error the API can answer has a stable code here, an HTTP status and
 * a default message; docs/errors.md documents each code (a test keeps the two equal).
 * `retryable` tells a caller (or our own consumers) whether trying again can succeed.
 */
export const ERRORS = {
  BAD_REQUEST: { status: 400, retryable: false, message: 'The request is malformed.' },
  INVALID_JSON: { status: 400, retryable: false, message: 'The request body is not valid JSON.' },
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false, message: 'The request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false, message: 'The request body must be application/json.' },
  UNAUTHORIZED: { status: 401, retryable: false, message: 'Missing or invalid credentials.' },
  FORBIDDEN: { status: 403, retryable: false, message: 'The credentials do not allow this request.' },
  NOT_FOUND: { status: 404, retryable: false, message: 'No such route.' },
  TENANT_NOT_FOUND: { status: 404, retryable: false, message: 'Tenant not found.' },
  DESTINATION_NOT_FOUND: { status: 404, retryable: false, message: 'Destination not found.' },
  EVENT_NOT_FOUND: { status: 404, retryable: false, message: 'Event not found.' },
  ATTEMPT_NOT_FOUND: { status: 404, retryable: false, message: 'Attempt not found.' },
  DESTINATION_TYPE_NOT_FOUND: { status: 404, retryable: false, message: 'Destination type not found.' },
  REQUEST_TIMEOUT: { status: 408, retryable: true, message: 'The request body did not arrive in time.' },
  METHOD_NOT_ALLOWED: { status: 405, retryable: false, message: 'Method not allowed on this route.' },
  VALIDATION_FAILED: { status: 422, retryable: false, message: 'The request is invalid.' },
  TENANT_ID_RESERVED: { status: 422, retryable: false, message: 'This tenant id collides with a fixed path.' },
  DESTINATION_LIMIT_REACHED: { status: 400, retryable: false, message: 'The tenant has reached its maximum number of destinations.' },
  DESTINATION_EXISTS: { status: 409, retryable: false, message: 'A destination with this id already exists.' },
  DESTINATION_DISABLED: { status: 422, retryable: false, message: 'The destination is disabled.' },
  EVENT_CONFLICT: { status: 409, retryable: true, message: 'An event with this id is being published; retry to learn its outcome.' },
  EVENT_NOT_SCHEDULED: {
    status: 409,
    retryable: false,
    message: 'The event is not scheduled for later: it is due already, or within a second.',
  },
  RATE_LIMITED: { status: 429, retryable: true, message: 'Too many requests.' },
  SERVICE_UNAVAILABLE: { status: 503, retryable: true, message: 'The service is temporarily unavailable.' },
  INTERNAL: { status: 500, retryable: true, message: 'Internal server error.' },
} as const satisfies Record<string, { status: number; retryable: boolean; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** One problem of a validation error: where it is and what is wrong. */
export interface Problem {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  /** The problems of a validation error. */
  readonly data: Problem[] | undefined;

  constructor(code: ErrorCode, message?: string, data?: Problem[], options?: { cause?: unknown }) {
    super(message ?? ERRORS[code].message, options);
    this.name = 'AppError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.retryable = ERRORS[code].retryable;
    this.data = data;
  }

  static validation(problems: Problem[], message = ERRORS.VALIDATION_FAILED.message): AppError {
    return new AppError('VALIDATION_FAILED', message, problems);
  }
}

/** The error body of the API. */
export interface ErrorBody {
  status: number;
  code: ErrorCode;
  message: string;
  /** Validation errors: every problem as one human-readable line, `"<path> <message>"`. */
  data?: string[];
  /** The same problems, structured: where each is and what is wrong. */
  problems?: Problem[];
}

/** One line per problem, as existing clients expect `data`: `body.type must be one of webhook, ...`. */
export const problemText = (p: Problem): string => `${p.path} ${p.message}`;

/**
 * The one error body shape of the API: {status, code, message, data?, problems?}. `data` lists the
 * problems of a validation error as strings (the form existing clients read); `problems` carries
 * them with their field path apart.
 */
export function errorBody(err: AppError): ErrorBody {
  const body: ErrorBody = { status: err.status, code: err.code, message: err.message };
  if (Array.isArray(err.data)) {
    const problems = err.data as Problem[];
    body.data = problems.map(problemText);
    body.problems = problems;
  }
  return body;
}
