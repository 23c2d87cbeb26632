/**
 * Groups calls into batches without a timer: while one flush runs, new items queue, and the queue is
 * flushed as one batch when it finishes. A lone call is flushed at once (no added latency); under
 * load, batches grow by themselves, so one round trip serves many callers.
 */
export function createBatcher<I, O>(flush: (items: I[]) => Promise<O[]>, maxBatch = 1000) {
  let queue: Array<{ item: I; resolve(o: O): void; reject(e: unknown): void }> = [];
  let running = false;

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

  return (item: I): Promise<O> =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!running) void drain();
    });
}
