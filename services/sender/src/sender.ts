import type { DeliveryRecord, EventRecord } from '@switchyard/shared/model/index.ts';

/** What one attempt came to. A destination's failure is data here, never an exception. */
export interface Outcome {
  status: 'success' | 'failed';
  /** 'OK', 'ERR' or the HTTP status code. */
  code: string;
  response_data: Record<string, unknown> | null;
  /** False when trying again cannot help (a blocked address, a rejected configuration). */
  retryable: boolean;
  /** A destination's request to wait (Retry-After), in milliseconds. */
  retryAfterMs?: number;
}

export interface DeliveryInput {
  event: EventRecord;
  destination: DeliveryRecord['destination'];
  /** Opened once per change and shared by the destination's deliveries: read, never change. */
  credentials: Readonly<Record<string, unknown>>;
  deliveryMetadata: Readonly<Record<string, string>>;
  signal: AbortSignal;
}

/** One implementation per destination type; the conformance suite runs against each. */
export interface Sender {
  deliver(input: DeliveryInput): Promise<Outcome>;
  close(): Promise<void>;
}
