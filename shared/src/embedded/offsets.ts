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
  /** Per partition (`OffsetStore.id`), each group's committed offset: `floor` reads one entry. */
  private readonly offsets = new Map<string, Map<string, number>>();
  /** Commits append one at a time: each frame goes at the end the one before it left. */
  private readonly serial = createSerial();

  constructor(dir: string) {
    this.path = join(dir, OFFSETS_FILE);
  }

  private static id(topic: string, partition: number): string {
    return JSON.stringify([topic, partition]);
  }

  private set(group: string, topic: string, partition: number, offset: number): void {
    const id = OffsetStore.id(topic, partition);
    let groups = this.offsets.get(id);
    if (!groups) {
      groups = new Map();
      this.offsets.set(id, groups);
    }
    groups.set(group, offset);
  }

  async open(): Promise<void> {
    if (existsSync(this.path)) {
      const buf = readFileSync(this.path);
      let pos = 0;
      for (;;) {
        const n = frameAt(buf, pos);
        if (n <= 0) break; // a torn last entry was never acknowledged
        const entries = JSON.parse(buf.toString('utf8', pos + HEADER, pos + n)) as Array<[string, string, number, number]>;
        for (const [g, t, p, o] of entries) this.set(g, t, p, o);
        pos += n;
      }
    }
    await this.compact();
  }

  /** Rewrites the file with one entry per partition (atomically: temp file, fsync, rename). */
  private async compact(): Promise<void> {
    await this.fh?.close();
    const entries: Array<[string, string, number, number]> = [];
    for (const [id, groups] of this.offsets) {
      const [t, p] = JSON.parse(id) as [string, number];
      for (const [g, o] of groups) entries.push([g, t, p, o]);
    }
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
    return this.offsets.get(OffsetStore.id(topic, partition))?.get(group);
  }

  /** The lowest offset any group committed on the partition (all below it read by every group); undefined: none did. */
  floor(topic: string, partition: number): number | undefined {
    let low: number | undefined;
    for (const offset of this.offsets.get(OffsetStore.id(topic, partition))?.values() ?? []) {
      if (low === undefined || offset < low) low = offset;
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
      for (const e of entries) this.set(group, e.topic, e.partition, e.offset);
      if (this.size > OFFSETS_COMPACT_BYTES) await this.compact();
    });
  }

  async close(): Promise<void> {
    await this.serial(async () => undefined);
    await this.fh?.close();
    this.fh = null;
  }
}
