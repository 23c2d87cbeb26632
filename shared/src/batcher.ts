/**
 * Groups calls into batches: while one flush runs, new items queue, and the queue is flushed as one
 * batch when it finishes, so under load batches grow by themselves and one round trip serves many
 * callers. A call that finds nothing running is flushed at once, or after `lingerMs` when that is set:
 * at low load a short wait lets a few calls share a round trip that each would otherwise make alone;
 * it ends early once `lingerUntil` calls wait (Kafka's producers: linger.ms and batch.size).
 * The wait is kept only while it pays (`createLingerGate`): a caller that waits for each answer
 * before its next call never finds company, and stops waiting after a few lingers.
 * A call given a `signal` is taken back when it aborts while the call still waits in the queue (its
 * promise rejects with the signal's reason, at once, during the abort): its item is never flushed.
 * Once in a flush, an abort changes nothing.
 */
export function createBatcher<I, O>(flush: (items: I[]) => Promise<O[]>, maxBatch = 1000, lingerMs = 0, lingerUntil = maxBatch) {
  let queue: Array<{ item: I; resolve(o: O): void; reject(e: unknown): void }> = [];
  let running = false;
  let lingering: NodeJS.Timeout | null = null;
  const gate = createLingerGate();

  async function drain(): Promise<void> {
    running = true;
    while (queue.length) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        const out = await flush(batch.map((b) => b.item));
        batch.forEach((b, i) => {
          b.resolve(out[i] as O);
        });
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    running = false;
  }

  function start(): void {
    if (lingering) clearTimeout(lingering);
    lingering = null;
    void drain();
  }

  function lingerEnded(): void {
    gate.record(queue.length > 1);
    start();
  }

  return (item: I, signal?: AbortSignal): Promise<O> =>
    new Promise<O>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const entry = { item, resolve, reject };
      if (signal) {
        const withdraw = () => {
          const i = queue.indexOf(entry);
          if (i < 0) return; // flushing or done: too late
          queue.splice(i, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', withdraw, { once: true });
        const done = () => signal.removeEventListener('abort', withdraw);
        entry.resolve = (o) => {
          done();
          resolve(o);
        };
        entry.reject = (e) => {
          done();
          reject(e);
        };
      }
      queue.push(entry);
      if (running) return;
      if (lingering) {
        if (queue.length >= lingerUntil) lingerEnded();
      } else if (lingerMs > 0 && queue.length < lingerUntil && gate.open()) lingering = setTimeout(lingerEnded, lingerMs);
      else start();
    });
}

/** Weight of the latest linger in the gate's running share of lingers that found company. */
const LINGER_SCORE_WEIGHT = 0.2;
/** First and longest pause between trial lingers while lingering does not pay. */
const LINGER_PROBE_MIN_MS = 50;
const LINGER_PROBE_MAX_MS = 1_000;

/**
 * Whether a batcher's next lone call lingers: yes while lingers find company, judged by a running
 * share of the recent ones (each weighs a fifth) staying at half or more. A caller that waits for
 * each answer before its next call (one publisher, one event at a time) never finds any, and would
 * pay the linger on every call; after four lone lingers the gate shuts, and a single trial linger
 * goes out after 50 ms, then 100, 200 ... at most every second; the first that finds company
 * opens the gate again. Lingering is a guess that more calls are on their way; this checks it.
 */
export function createLingerGate(now: () => number = performance.now.bind(performance)) {
  let score = 1;
  let probeGap = LINGER_PROBE_MIN_MS;
  let probeAt = 0;
  return {
    open(): boolean {
      return score >= 0.5 || now() >= probeAt;
    },
    /** A linger ended: `company` when other calls joined it. */
    record(company: boolean): void {
      score = score * (1 - LINGER_SCORE_WEIGHT) + (company ? LINGER_SCORE_WEIGHT : 0);
      // Company after a lone spell opens the gate at once, however long the spell was.
      if (company) score = Math.max(score, 0.6);
      if (score >= 0.5) probeGap = LINGER_PROBE_MIN_MS;
      else {
        probeAt = now() + probeGap;
        probeGap = Math.min(probeGap * 2, LINGER_PROBE_MAX_MS);
      }
    },
  };
}

/**
 * Runs the functions handed to it one after another, in the order given, each once the one before
 * it has settled; a failure fails only its own call. For writes that must not overlap (a file's
 * appends, a Kafka producer's requests).
 */
export function createSerial(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}
