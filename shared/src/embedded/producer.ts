// The embedded log's producer: records appended to the partition of their key's CRC-32, resolved once
// fdatasync'd (one group commit covers concurrent appends).
import { crc32 } from 'node:zlib';
import type { BusProducer } from '../bus/index.ts';
import { encode } from './codec.ts';
import type { EmbeddedContext } from './context.ts';
import type { Partition } from './partition.ts';

export function createProducer(ctx: EmbeddedContext): BusProducer {
  const handle: BusProducer = {
    async sendMany(batches) {
      // One group commit (one fdatasync) covers the concurrent appends.
      await Promise.all(batches.map((b) => handle.send(b.topic, b.records)));
    },
    async send(topic, records) {
      if (records.length === 0) return;
      if (ctx.closed) throw new Error('embedded log is closed');
      const parts = await ctx.openTopic(ctx.name(topic), false);
      const now = Date.now();
      const byPartition = new Map<Partition, Buffer[]>();
      for (const r of records) {
        const part = parts[crc32(r.key ?? '') % parts.length] as Partition;
        const list = byPartition.get(part) ?? [];
        list.push(encode(r, now));
        byPartition.set(part, list);
      }
      await Promise.all([...byPartition].map(([part, frames]) => part.append(frames)));
    },
    async close() {},
  };
  return handle;
}
