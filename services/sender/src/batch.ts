/**
 * Coalesces one destination's deliveries into batch requests (SQS SendMessageBatch, Kinesis
 * PutRecords; docs/destination-types.md). A client owns one coalescer, so a slow or
 * failing destination's batches never hold another destination's deliveries.
 *
 * A batch goes at once when it is full (`maxEntries`, or `maxBytes` reached). Otherwise its first
 * entry waits `waitMs` for company, and then the batch goes if fewer than `maxInFlight` of the
 * coalescer's requests are out; if not, it keeps filling until one answers, it fills, or it has
 * waited `slotWaitMs` more. So a quiet destination's entry leaves after `waitMs`, and under load the
 * requests in flight set the pace: a batch holds what arrived while the previous one was out, up to
 * the deliveries the consumer lets in (SENDER_CONCURRENCY and the type's key concurrency: every
 * entry is a delivery holding its slot until its own outcome is known), not what arrived within one
 * wait. `slotWaitMs` keeps a slow peer's requests from eating the deadlines of the entries behind
 * them. An entry that would overflow the waiting batch's bytes sends that batch first; an entry
 * larger than `maxEntryBytes` (what the service takes in one entry) goes alone at once, so the peer's
 * refusal of it is its own.
 *
 * Each entry keeps its own outcome: `send` answers one per entry, in order. An entry whose deadline
 * passes while it waits leaves the batch as a timeout; a batch in flight is aborted by the earliest
 * deadline of its entries (they joined within `waitMs + slotWaitMs` of each other).
 */
import { failed, type Outcome } from './sender.ts';

export interface BatchLimits {
  /** Entries one request takes. */
  maxEntries: number;
  /** Bytes one request takes, as the service counts them. */
  maxBytes: number;
  /** Bytes one entry may have; a larger one is sent alone (default `maxBytes`). */
  maxEntryBytes?: number;
  /** Longest the first entry of a batch waits for others while fewer than `maxInFlight` requests are out. */
  waitMs: number;
  /** Requests out at once before a batch that is not full waits for one of them to answer (default 1). */
  maxInFlight?: number;
  /** Longest a batch that has waited `waitMs` then waits for one of those to answer (default 100). */
  slotWaitMs?: number;
}

/** Sends one batch; answers one outcome per entry, in order. A destination's failure is data, never thrown. */
export type SendBatch<E> = (entries: E[], signal: AbortSignal) => Promise<Outcome[]>;

/** Whole-request refusals that may be one entry's doing (a message over the queue's size, a malformed record). */
const REFUSED: ReadonlySet<unknown> = new Set(['invalid_config', 'rejected']);

/**
 * `send`, where a batch of several entries refused as a whole for what it carries is sent again one
 * entry a request, so one bad entry fails alone and the others go through (SQS and moto refuse a
 * whole SendMessageBatch for one message over the queue's MaximumMessageSize). When some entries
 * then go through, the destination's settings work: a refusal is that entry's (`rejected`,
 * retried as usual), not the destination's `invalid_config`.
 */
export function refusedAlone<E>(send: SendBatch<E>): SendBatch<E> {
  return async (entries, signal) => {
    const outcomes = await send(entries, signal);
    const whole = (o: Outcome) => o.status === 'failed' && REFUSED.has(o.response_data?.reason) && o.response_data?.batch_entry !== true;
    if (entries.length < 2 || !outcomes.every(whole)) return outcomes;
    const alone = (await Promise.all(entries.map((e) => send([e], signal)))).map((o) => o[0] as Outcome);
    if (!alone.some((o) => o.status === 'success')) return alone;
    return alone.map((o) =>
      o.response_data?.reason === 'invalid_config'
        ? failed('rejected', String(o.response_data.message), { ...o.response_data, reason: 'rejected', batch_entry: true })
        : o,
    );
  };
}

export interface Coalescer<E> {
  /** Adds one delivery's entry of `bytes`; resolves to that entry's outcome. */
  add(entry: E, bytes: number, signal: AbortSignal): Promise<Outcome>;
  /** Sends what waits now and resolves once every batch in flight has its answer (close, shutdown). */
  drain(): Promise<void>;
  /** Batch requests made so far. */
  readonly requests: number;
  /** Batch requests out now. */
  readonly inFlight: number;
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
  /** The waiting batch's first entry has waited `waitMs`: it goes when a request slot is free. */
  let due = false;
  /** Sends the due batch after `slotWaitMs` whatever is in flight. */
  let slotTimer: NodeJS.Timeout | null = null;
  let requests = 0;
  /** Requests out now, the lone oversize entries left out (they go whatever is in flight). */
  let out = 0;
  const inflight = new Set<Promise<void>>();

  const maxEntryBytes = Math.min(limits.maxEntryBytes ?? limits.maxBytes, limits.maxBytes);
  const maxInFlight = Math.max(1, limits.maxInFlight ?? 1);
  const slotWaitMs = limits.slotWaitMs ?? 100;
  const stopTimer = () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    if (slotTimer) {
      clearTimeout(slotTimer);
      slotTimer = null;
    }
  };
  const flush = () => {
    stopTimer();
    due = false;
    const batch = waiting;
    waiting = [];
    bytes = 0;
    if (batch.length === 0) return;
    for (const w of batch) w.signal.removeEventListener('abort', w.onAbort);
    sendBatch(batch, true);
  };
  const onDue = () => {
    timer = null;
    due = true;
    if (out < maxInFlight) flush();
    else slotTimer = setTimeout(flush, slotWaitMs);
  };
  const sendBatch = (batch: Waiting<E>[], counted: boolean) => {
    requests++;
    if (counted) out++;
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
      .finally(() => {
        inflight.delete(done);
        if (!counted) return;
        out--;
        // The batch that filled while this request was out goes now, if it has waited its wait.
        if (due && out < maxInFlight) flush();
      });
    inflight.add(done);
  };

  return {
    add(entry, size, signal) {
      if (signal.aborted) return Promise.resolve(timedOut());
      if (size > maxEntryBytes) {
        return new Promise<Outcome>((resolve, reject) => {
          sendBatch([{ entry, bytes: size, signal, resolve, reject, onAbort() {} }], false);
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
            if (waiting.length === 0) {
              stopTimer();
              due = false;
            }
            resolve(timedOut());
          },
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
        waiting.push(w);
        bytes += size;
        if (waiting.length >= limits.maxEntries || bytes >= limits.maxBytes) flush();
        else if (!due) timer ??= setTimeout(onDue, limits.waitMs);
      });
    },
    async drain() {
      // What waits goes now, whatever is out; again for entries added meanwhile.
      do {
        flush();
        while (inflight.size > 0) await Promise.all(inflight);
      } while (waiting.length > 0);
    },
    get requests() {
      return requests;
    },
    get inFlight() {
      return out;
    },
  };
}
