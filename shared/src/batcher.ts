/**
 * Groups calls into batches: while one flush runs, new items queue, and the queue is flushed as one
 * batch when it finishes, so under load batches grow by themselves and one round trip serves many
 * callers. A call that finds nothing running is flushed at once, or after `lingerMs` when that is set:
 * at low load a short wait lets a few calls share a round trip that each would otherwise make alone.
 * A call given a `signal` is taken back when it aborts while the call still waits in the queue (its
 * promise rejects with the signal's reason, at once, during the abort): its item is never flushed.
 * Once in a flush, an abort changes nothing.
 */
export function createBatcher<I, O>(flush: (items: I[]) => Promise<O[]>, maxBatch = 1000, lingerMs = 0) {
  let queue: Array<{ item: I; resolve(o: O): void; reject(e: unknown): void }> = [];
  let running = false;
  let lingering: NodeJS.Timeout | null = null;

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
      if (lingerMs > 0 && queue.length < maxBatch) lingering ??= setTimeout(start, lingerMs);
      else start();
    });
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
