// The embedded log's delayed consumer (the retry tiers): a loop per partition releases the records
// now due and sleeps until the next one is, plus slack, as the Kafka bus pauses and resumes.
import { DELAYED_RELEASE_SLICE, releaseSlackMs, releaseSlice } from '../bus/consume.ts';
import type { BusConsumer, DelayedConsumeOptions } from '../bus/index.ts';
import { retryInPlace } from '../bus/inflight.ts';
import type { Logger } from '../log.ts';
import { type StoredRecord, toInRecord } from './codec.ts';
import { type EmbeddedContext, retryFor, sleep } from './context.ts';
import type { Partition } from './partition.ts';

/** One partition of a delayed topic, read until `signal` aborts. */
async function releaseLoop<T>(
  ctx: EmbeddedContext,
  o: DelayedConsumeOptions<T>,
  p: Partition,
  delay: number,
  log: Logger,
  signal: AbortSignal,
): Promise<void> {
  let pos = ctx.startOf(o.groupId, p, true);
  // Logged with a failure: the offset of the failed record (the commit stops before it).
  const where = {
    topic: p.topic,
    partition: p.id,
    get offset() {
      return String(pos);
    },
  };
  // Released from `pos` on: after a failure, again from the failed record (as Kafka fetches
  // again from it), with backoff.
  const release = (due: StoredRecord[]) =>
    releaseSlice(
      due.filter((r) => r.offset >= pos),
      (r) => o.handle(toInRecord<T>(p.topic, p.id, r)),
      async (last) => {
        await ctx.offsets.commit(o.groupId, [{ topic: p.topic, partition: p.id, offset: last.offset + 1 }]);
        pos = last.offset + 1;
      },
    );
  while (!signal.aborted) {
    await p.waitFor(pos, signal);
    if (signal.aborted) return;
    pos = Math.max(pos, p.start());
    // Each topic has one delay, so a partition is in due order: the due records lead.
    const records = await p.read(pos, DELAYED_RELEASE_SLICE);
    const now = Date.now();
    const firstLater = records.findIndex((r) => r.timestamp + delay > now);
    const due = firstLater < 0 ? records : records.slice(0, firstLater);
    if (due.length && !(await retryInPlace(() => release(due), retryFor(log, signal, where)))) return;
    const next = firstLater < 0 ? undefined : records[firstLater];
    if (!next) continue;
    // Not due: wait for it (and those due soon after: releaseSlackMs, as with Kafka), then
    // read again from it. A loop, since timers may fire a millisecond early by the wall clock.
    const resumeAt = next.timestamp + delay + releaseSlackMs(delay);
    for (let wait = resumeAt - Date.now(); wait > 0 && !signal.aborted; wait = resumeAt - Date.now()) {
      await sleep(wait, signal);
    }
  }
}

export async function consumeDelayed<T>(ctx: EmbeddedContext, o: DelayedConsumeOptions<T>): Promise<BusConsumer> {
  ctx.claimGroup(o.groupId);
  const log = ctx.opts.log.child({ group: o.groupId });
  const abort = new AbortController();
  const loops: Promise<void>[] = [];
  for (const t of o.topics) {
    const delay = o.delayMs(t);
    for (const p of await ctx.openTopic(ctx.name(t), false)) {
      loops.push(
        releaseLoop(ctx, o, p, delay, log, abort.signal).catch((err: unknown) =>
          log.error({ err, topic: p.topic, partition: p.id }, 'embedded log: delayed consumer loop failed'),
        ),
      );
    }
  }
  let closing: Promise<void> | null = null;
  const handle: BusConsumer = {
    close() {
      closing ??= (async () => {
        abort.abort();
        await Promise.allSettled(loops);
        ctx.groups.delete(o.groupId);
      })();
      return closing;
    },
  };
  ctx.consumers.push(handle);
  return handle;
}
