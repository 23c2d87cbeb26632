// Committed offsets of every group of the embedded log: an append-only file, replayed and compacted at open.
import { existsSync, readFileSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { createSerial } from '../batcher.ts';
import { frameAt, HEADER } from './codec.ts';
import { writeFileDurably } from './lock.ts';

const OFFSETS_FILE = '__consumer_offsets.log';
const OFFSETS_COMPACT_BYTES = 8 << 20;

// ---------------------------------------------------------------------------------------------
// Committed offsets of every group: an append-only file, replayed and compacted at open.

export class OffsetStore {
  private readonly path: string;
  private fh: FileHandle | null = null;
  private size = 0;
  private readonly offsets = new Map<string, number>();
  /** Commits append one at a time: each frame goes at the end the one before it left. */
  private readonly serial = createSerial();

  constructor(dir: string) {
    this.path = join(dir, OFFSETS_FILE);
  }

  private static id(group: string, topic: string, partition: number): string {
    return JSON.stringify([group, topic, partition]);
  }

  async open(): Promise<void> {
    if (existsSync(this.path)) {
      const buf = readFileSync(this.path);
      let pos = 0;
      for (;;) {
        const n = frameAt(buf, pos);
        if (n <= 0) break; // a torn last entry was never acknowledged
        const entries = JSON.parse(buf.toString('utf8', pos + HEADER, pos + n)) as Array<[string, string, number, number]>;
        for (const [g, t, p, o] of entries) this.offsets.set(OffsetStore.id(g, t, p), o);
        pos += n;
      }
    }
    await this.compact();
  }

  /** Rewrites the file with one entry per partition (atomically: temp file, fsync, rename). */
  private async compact(): Promise<void> {
    await this.fh?.close();
    const entries = [...this.offsets].map(([k, o]) => [...(JSON.parse(k) as [string, string, number]), o]);
    const data = entries.length ? OffsetStore.frame(entries) : Buffer.alloc(0);
    await writeFileDurably(this.path, data);
    this.fh = await open(this.path, 'a');
    this.size = data.length;
  }

  private static frame(entries: unknown[]): Buffer {
    const body = Buffer.from(JSON.stringify(entries), 'utf8');
    const buf = Buffer.allocUnsafe(HEADER + body.length);
    buf.writeUInt32BE(body.length, 0);
    buf.writeUInt32BE(crc32(body), 4);
    body.copy(buf, HEADER);
    return buf;
  }

  get(group: string, topic: string, partition: number): number | undefined {
    return this.offsets.get(OffsetStore.id(group, topic, partition));
  }

  /** The lowest offset any group committed on the partition (all below it read by every group); undefined: none did. */
  floor(topic: string, partition: number): number | undefined {
    let low: number | undefined;
    for (const [key, offset] of this.offsets) {
      const [, t, p] = JSON.parse(key) as [string, string, number];
      if (t === topic && p === partition && (low === undefined || offset < low)) low = offset;
    }
    return low;
  }

  /** Resolves once the offsets are durable. */
  commit(group: string, entries: Array<{ topic: string; partition: number; offset: number }>): Promise<void> {
    if (!entries.length) return Promise.resolve();
    return this.serial(async () => {
      const fh = this.fh;
      if (!fh) throw new Error('embedded log is closed');
      const frame = OffsetStore.frame(entries.map((e) => [group, e.topic, e.partition, e.offset]));
      await fh.write(frame, 0, frame.length, this.size);
      await fh.datasync();
      this.size += frame.length;
      for (const e of entries) this.offsets.set(OffsetStore.id(group, e.topic, e.partition), e.offset);
      if (this.size > OFFSETS_COMPACT_BYTES) await this.compact();
    });
  }

  async close(): Promise<void> {
    await this.serial(async () => undefined);
    await this.fh?.close();
    this.fh = null;
  }
}
