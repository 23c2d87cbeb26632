/**
 * What the AWS types (sqs, kinesis, s3) share: the client settings built from a destination (region,
 * `endpoint`, the access key, HTTP/1.1 through agents whose connections obey EGRESS_ALLOW, no SDK
 * retries: the pipeline retries) and the reading of an AWS error, or of one failed entry of a batch,
 * as a failure reason.
 */
import http from 'node:http';
import https from 'node:https';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { type AllowList, createEgressLookup, literalBlocked } from './egress.ts';
import { classifyNetworkError } from './network-errors.ts';
import { type FailureReason, failed, type Outcome, type Target } from './sender.ts';

export interface AwsClientConfig {
  region: string;
  endpoint?: string;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  requestHandler: NodeHttpHandler;
  maxAttempts: number;
  logger: typeof QUIET;
}

const nothing = () => {};
/**
 * The SDK's logger. Without one, the SQS client writes a plain-text console.warn for every request
 * whose queue URL host is not its endpoint's (an emulator, a VPC endpoint); failures come back as
 * errors, so nothing it would log is needed.
 */
const QUIET = { trace: nothing, debug: nothing, info: nothing, warn: nothing, error: nothing };

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Client settings of one destination. `region` falls back to `fallbackRegion` (for sqs, the region
 * in the queue URL) and then us-east-1. Connections are kept alive and shared by the destination's
 * deliveries; every address they reach passes the egress policy.
 */
export function awsClientConfig(target: Target, allow: AllowList, fallbackRegion?: string): AwsClientConfig {
  const { config, credentials } = target;
  const lookup = createEgressLookup(allow);
  const endpoint = text(config.endpoint);
  return {
    region: text(config.region) ?? fallbackRegion ?? 'us-east-1',
    ...(endpoint ? { endpoint } : {}),
    credentials: {
      accessKeyId: String(credentials.key ?? ''),
      secretAccessKey: String(credentials.secret ?? ''),
      ...(text(credentials.session) ? { sessionToken: String(credentials.session) } : {}),
    },
    requestHandler: new NodeHttpHandler({
      httpAgent: new http.Agent({ keepAlive: true, maxSockets: 64, lookup }),
      httpsAgent: new https.Agent({ keepAlive: true, maxSockets: 64, lookup }),
    }),
    maxAttempts: 1,
    logger: QUIET,
  };
}

/** The refusal of a destination whose URL names an IP literal EGRESS_ALLOW does not admit, else null. */
export function egressRefusal(url: string | undefined, allow: AllowList): Outcome | null {
  if (!url) return null;
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return failed('invalid_config', `not a URL: ${url}`);
  }
  const err = literalBlocked(host, allow);
  return err ? failed('egress_blocked', err.message) : null;
}

const UNAUTHORIZED = new Set([
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'SignatureDoesNotMatch',
  'InvalidAccessKeyId',
  'AccessDenied',
  'AccessDeniedException',
  'ExpiredToken',
  'ExpiredTokenException',
  'InvalidSecurity',
  'MissingAuthenticationToken',
  'MissingAuthenticationTokenException',
  'IncompleteSignature',
  'IncompleteSignatureException',
  'InvalidToken',
  'AuthorizationError',
  'KMSAccessDeniedException',
  'KMSAccessDenied',
  'AllAccessDisabled',
  'AccountProblem',
]);
const NOT_FOUND = new Set([
  'QueueDoesNotExist',
  'AWS.SimpleQueueService.NonExistentQueue',
  'NonExistentQueue',
  'ResourceNotFoundException',
  'NoSuchBucket',
  'NotFound',
  'KMSNotFoundException',
]);
const THROTTLED = new Set([
  'ThrottlingException',
  'Throttling',
  'ProvisionedThroughputExceededException',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'KMSThrottlingException',
  'LimitExceededException',
]);
/** The request can never succeed as the destination is configured. */
const INVALID_CONFIG = new Set([
  'InvalidAddress',
  'InvalidParameterValue',
  'InvalidParameterCombination',
  'InvalidArgumentException',
  'InvalidArgument',
  'InvalidBucketName',
  'InvalidStorageClass',
  'InvalidRequest',
  'MissingParameter',
  'UnsupportedOperation',
  'AuthorizationHeaderMalformed',
  'PermanentRedirect',
  'InvalidBucketState',
  'KMSDisabledException',
  'KMSInvalidStateException',
  'ValidationException',
]);

interface AwsErrorLike {
  name?: string;
  Code?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number; requestId?: string };
  $response?: { statusCode?: number; headers?: Record<string, string> };
  $retryable?: { throttling?: boolean };
}

/** Seconds of a Retry-After header as milliseconds, if the answer had one. */
function retryAfterOf(e: AwsErrorLike): number | undefined {
  const v = e.$response?.headers?.['retry-after'];
  if (v && /^\d+$/.test(v)) return Number(v) * 1000;
  return undefined;
}

/**
 * An AWS SDK failure as an outcome. `signal` tells a timeout from other aborts. An error the service
 * answered carries its HTTP status; one without is the network's (or the deadline's).
 */
export function awsFailure(err: unknown, signal: AbortSignal): Outcome {
  const e = (err ?? {}) as AwsErrorLike;
  const status = e.$metadata?.httpStatusCode ?? e.$response?.statusCode;
  // The SDK names a reset connection (ECONNRESET, EPIPE) a TimeoutError too: its code tells them apart.
  const networkCode = typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code) && e.code !== 'ETIMEDOUT';
  if (signal.aborted || (status === undefined && !networkCode && (e.name === 'AbortError' || e.name === 'TimeoutError'))) {
    return failed('timeout', 'no answer within the delivery timeout');
  }
  if (status === undefined) {
    const { reason, message } = classifyNetworkError(err);
    return failed(reason, message);
  }
  // SQS's query-compatible codes come as the name; S3 puts the code in `Code`.
  // AWS JSON errors may name their shape with its namespace (com.amazonaws.sqs#QueueDoesNotExist).
  const name = (e.Code ?? e.name ?? 'UnknownError').split('#').pop() as string;
  const message = e.message && e.message !== 'UnknownError' ? e.message : name;
  const details = { error: name, http_status: status, ...(e.$metadata?.requestId ? { request_id: e.$metadata.requestId } : {}) };
  const reason = reasonOf(name, status, e.$retryable?.throttling === true);
  return failed(reason, message, details, reason === 'throttled' ? retryAfterOf(e) : undefined);
}

function reasonOf(name: string, status: number, throttling: boolean): FailureReason {
  if (UNAUTHORIZED.has(name) || status === 401 || status === 403) return 'unauthorized';
  if (NOT_FOUND.has(name) || status === 404) return 'not_found';
  if (THROTTLED.has(name) || throttling || status === 429) return 'throttled';
  if (INVALID_CONFIG.has(name)) return 'invalid_config';
  return status >= 500 ? 'peer_error' : 'rejected';
}

/**
 * The failure of one entry of a batch the service answered (SQS's `Failed` entries, Kinesis's
 * records with an `ErrorCode`): read as the same error of a single request would be, the service's
 * fault (`senderFault` false: InternalFailure, ServiceUnavailable) as a peer_error.
 */
export function awsEntryFailure(code: string | undefined, message: string | undefined, senderFault: boolean): Outcome {
  const name = (code || 'UnknownError').split('#').pop() as string;
  // The request itself was accepted, so the destination's settings work: a malformed entry is this event's refusal.
  const read = reasonOf(name, senderFault ? 400 : 500, false);
  const reason = read === 'invalid_config' ? 'rejected' : read;
  return failed(reason, message || name, { error: name, batch_entry: true });
}
