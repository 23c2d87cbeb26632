/**
 * `work`'s result, or `signal.reason` as soon as the signal aborts: for clients whose calls take
 * no signal of their own (kafkajs's send, Pub/Sub's publish). The call itself goes on; its later
 * failure is ignored, since the delivery has been answered.
 */
export async function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } catch (err) {
    work.catch(() => {});
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
