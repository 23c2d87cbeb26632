/**
 * Coalesces one destination's deliveries into batch requests (SQS SendMessageBatch, Kinesis
 * PutRecords; docs/destination-types.md). A client owns one coalescer, so a slow or
 * failing destination's batches never hold another destination's deliveries.
 *
 * An entry waits at most `waitMs` for company: the first entry of a batch arms the timer, and the
 * batch goes at once when it is full (`maxEntries`, or `maxBytes` reached). An entry that would
 * overflow the waiting batch's bytes sends that batch first; an entry larger than `maxEntryBytes`
 * (what the service takes in one entry) goes alone at once, so the peer's refusal of it is its own. Batches do not wait for each other: several may be
 * in flight, bounded by the deliveries the consumer lets in (SENDER_CONCURRENCY and the type's key
 * concurrency), since every entry is a delivery holding its slot until its own outcome is known.
 *
 * Each entry keeps its own outcome: `send` answers one per entry, in order. An entry whose deadline
 * passes while it waits leaves the batch as a timeout; a batch in flight is aborted by the earliest
 * deadline of its entries (they were collected within `waitMs` of each other).
 */
import { failed, type Outcome } from './sender.ts';

export interface BatchLimits {
  /** Entries one request takes. */
  maxEntries: number;
  /** Bytes one request takes, as the service counts them. */
  maxBytes: number;
  /** Bytes one entry may have; a larger one is sent alone (default `maxBytes`). */
  maxEntryBytes?: number;
  /** Longest an entry waits for others before its batch is sent. */
  waitMs: number;
}

/** Sends one batch; answers one outcome per entry, in order. A destination's failure is data, never thrown. */
export type SendBatch<E> = (entries: E[], signal: AbortSignal) => Promise<Outcome[]>;

export interface Coalescer<E> {
  /** Adds one delivery's entry of `bytes`; resolves to that entry's outcome. */
  add(entry: E, bytes: number, signal: AbortSignal): Promise<Outcome>;
  /** Sends what waits now and resolves once every batch in flight has its answer (close, shutdown). */
  drain(): Promise<void>;
  /** Batch requests made so far. */
  readonly requests: number;
}

interface Waiting<E> {
  entry: E;
  bytes: number;
  signal: AbortSignal;
  resolve(o: Outcome): void;
  reject(err: unknown): void;
  onAbort(): void;
}

const timedOut = () => failed('timeout', 'no answer within the delivery timeout');

export function createCoalescer<E>(limits: BatchLimits, send: SendBatch<E>): Coalescer<E> {
  let waiting: Waiting<E>[] = [];
  let bytes = 0;
  let timer: NodeJS.Timeout | null = null;
  let requests = 0;
  const inflight = new Set<Promise<void>>();

  const maxEntryBytes = Math.min(limits.maxEntryBytes ?? limits.maxBytes, limits.maxBytes);
  const flush = () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    const batch = waiting;
    waiting = [];
    bytes = 0;
    if (batch.length === 0) return;
    for (const w of batch) w.signal.removeEventListener('abort', w.onAbort);
    sendBatch(batch);
  };
  const sendBatch = (batch: Waiting<E>[]) => {
    requests++;
    const signal = batch.length === 1 ? (batch[0] as Waiting<E>).signal : AbortSignal.any(batch.map((w) => w.signal));
    const done: Promise<void> = send(
      batch.map((w) => w.entry),
      signal,
    )
      .then(
        (outcomes) => {
          batch.forEach((w, i) => {
            w.resolve(outcomes[i] ?? failed('sender_error', 'the batch answered no outcome for this entry'));
          });
        },
        (err: unknown) => {
          for (const w of batch) w.reject(err);
        },
      )
      .finally(() => inflight.delete(done));
    inflight.add(done);
  };

  return {
    add(entry, size, signal) {
      if (signal.aborted) return Promise.resolve(timedOut());
      if (size > maxEntryBytes) {
        return new Promise<Outcome>((resolve, reject) => {
          sendBatch([{ entry, bytes: size, signal, resolve, reject, onAbort() {} }]);
        });
      }
      // The waiting batch cannot take this entry's bytes: it goes now, and this entry starts the next.
      if (waiting.length > 0 && bytes + size > limits.maxBytes) flush();
      return new Promise<Outcome>((resolve, reject) => {
        const w: Waiting<E> = {
          entry,
          bytes: size,
          signal,
          resolve,
          reject,
          onAbort: () => {
            const i = waiting.indexOf(w);
            if (i < 0) return;
            waiting.splice(i, 1);
            bytes -= w.bytes;
            if (waiting.length === 0 && timer) {
              clearTimeout(timer);
              timer = null;
            }
            resolve(timedOut());
          },
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
        waiting.push(w);
        bytes += size;
        if (waiting.length >= limits.maxEntries || bytes >= limits.maxBytes) flush();
        else timer ??= setTimeout(flush, limits.waitMs);
      });
    },
    async drain() {
      flush();
      while (inflight.size > 0) await Promise.all(inflight);
    },
    get requests() {
      return requests;
    },
  };
}
