/**
 * The sender interface every destination type implements (docs/destination-types.md).
 *
 * A type's sender module exports a `TypeSender`: `open` builds a `Client` for one destination from its
 * config and decrypted credentials; the client delivers one event at a time and is closed when the
 * destination changes, goes away or the process stops (clients.ts caches one per destination). A
 * destination's failure is an `Outcome` with status failed, never an exception: the attempt keeps
 * interface.md's `code` (`OK`, `ERR` or the HTTP status of an HTTP answer) and `response_data.reason`
 * names the failure from the vocabulary below, with the peer's own words in `response_data.message`.
 * Only our own faults (`OwnFault`) are thrown: the record is handled again and no attempt is made.
 */
import type { DeliveryRecord, DestinationType, EventRecord } from '@switchyard/shared/model/index.ts';

/** What one attempt came to. A destination's failure is data here, never an exception. */
export interface Outcome {
  status: 'success' | 'failed';
  /** 'OK', 'ERR' or the HTTP status code. */
  code: string;
  response_data: Record<string, unknown> | null;
  /** False when trying again cannot help (a blocked address, a rejected configuration). */
  retryable: boolean;
  /** A destination's request to wait (Retry-After, a throttling answer), in milliseconds. */
  retryAfterMs?: number;
}

/**
 * Why a delivery failed, in `response_data.reason`. One vocabulary for every type:
 * - unauthorized: the peer refused the credentials (or their rights): fix them, retries then succeed.
 * - not_found: the queue, exchange, stream, bucket or source does not exist (yet).
 * - throttled: the peer asked us to slow down; the retry waits at least as long as it asked.
 * - timeout: no answer within DELIVERY_TIMEOUT_SECONDS (connecting included).
 * - connection_refused, connection_reset, dns_error, tls_error, network_error: the network said no.
 * - egress_blocked: the address is not allowed by EGRESS_ALLOW; not retried.
 * - invalid_config: the destination's settings can never work (a template that does not evaluate, a
 *   value the peer rejects as malformed); not retried.
 * - rejected: the peer refused this one event (too large, a nack); retried.
 * - peer_error: the peer failed on its side (a 5xx, an internal error); retried.
 * - sender_error: a sender threw instead of answering (a bug of ours, recorded so it is visible).
 */
export type FailureReason =
  | 'unauthorized'
  | 'not_found'
  | 'throttled'
  | 'timeout'
  | 'connection_refused'
  | 'connection_reset'
  | 'dns_error'
  | 'tls_error'
  | 'network_error'
  | 'egress_blocked'
  | 'invalid_config'
  | 'rejected'
  | 'peer_error'
  | 'sender_error';

/** Reasons no retry can cure: the destination has to be changed first. */
export const PERMANENT_REASONS: ReadonlySet<FailureReason> = new Set(['invalid_config', 'egress_blocked']);

/** A success without an HTTP status (`code` OK), with what the peer answered, if anything worth keeping. */
export function succeeded(response_data: Record<string, unknown> | null = null): Outcome {
  return { status: 'success', code: 'OK', response_data, retryable: false };
}

/**
 * A destination's failure: `code` ERR (or the HTTP status given in `details.status`), the reason, the
 * peer's message (one line, bounded) and any details; retryable unless the reason is permanent.
 */
export function failed(reason: FailureReason, message: string, details: Record<string, unknown> = {}, retryAfterMs?: number): Outcome {
  const line = (message.split('\n')[0] ?? '').trim();
  return {
    status: 'failed',
    code: typeof details.status === 'number' ? String(details.status) : 'ERR',
    response_data: { reason, message: line.length > 500 ? `${line.slice(0, 500)}…` : line || reason, ...details },
    retryable: !PERMANENT_REASONS.has(reason),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/**
 * Thrown (only) for a fault of this service, not of the destination: the handler rethrows it, so the
 * record is handled again later without an attempt being counted. Never for anything a peer said.
 */
export class OwnFault extends Error {
  override readonly name = 'OwnFault';
}

/** What a client is built from: one destination's config and its decrypted credentials. Never logged. */
export interface Target {
  id: string;
  tenant_id: string;
  type: DestinationType;
  config: Readonly<Record<string, unknown>>;
  credentials: Readonly<Record<string, unknown>>;
}

/** One delivery handed to a client. */
export interface Delivery {
  event: EventRecord;
  /** The destination's delivery_metadata (see metadata.ts for the map every type sends). */
  deliveryMetadata: Readonly<Record<string, string>>;
  /** Fires at the delivery deadline (DELIVERY_TIMEOUT_SECONDS): the client gives up and answers `timeout`. */
  signal: AbortSignal;
}

/** A connection (or its equivalent) to one destination; deliveries may overlap. */
export interface Client {
  deliver(delivery: Delivery): Promise<Outcome>;
  /** Releases what the client holds; called once no delivery of it is in flight. */
  close(): Promise<void>;
}

/**
 * One per destination type. `open` must not throw for a bad destination and should not wait for the
 * network: a client connects on its first delivery, so that a refusal becomes that delivery's outcome.
 */
export interface TypeSender {
  open(target: Target): Client;
  /** Releases what the type shares between its clients (the webhook agent); after every client closed. */
  close(): Promise<void>;
}

/** What the delivery handler gives the sender of a type (clients.ts turns a TypeSender into this). */
export interface DeliveryInput {
  event: EventRecord;
  destination: DeliveryRecord['destination'];
  /** Opened once per change and shared by the destination's deliveries: read, never change. */
  credentials: Readonly<Record<string, unknown>>;
  deliveryMetadata: Readonly<Record<string, string>>;
  signal: AbortSignal;
}

/** The handler's view of one type: deliver through the destination's cached client. */
export interface Sender {
  deliver(input: DeliveryInput): Promise<Outcome>;
  close(): Promise<void>;
}
