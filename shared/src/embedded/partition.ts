// One partition of the embedded log: segments, group-committed appends, reads below the durable end.
import { mkdirSync, readdirSync, statSync, unlinkSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log.ts';
import { frameAt, decode, type StoredRecord } from './codec.ts';
import { syncDir } from './lock.ts';

export const MAX_FETCH_RECORDS = 1000;
const MAX_FETCH_BYTES = 1 << 20;

// ---------------------------------------------------------------------------------------------
// One partition: segments, group-committed appends, reads below the durable end.

interface Segment {
  base: number;
  path: string;
  fh: FileHandle;
  size: number;
  /** Byte position of each record; offset = base + index. */
  positions: number[];
  lastWrite: number;
}

const segmentName = (base: number) => `${String(base).padStart(20, '0')}.log`;

export class Partition {
  readonly topic: string;
  readonly id: number;
  private readonly dir: string;
  private readonly segmentBytes: number;
  private readonly log: Logger;
  private segments: Segment[] = [];
  private pending: Array<{ frames: Buffer[]; resolve(): void; reject(err: unknown): void }> = [];
  private flushing = false;
  private listeners = new Set<() => void>();

  constructor(topic: string, id: number, dir: string, segmentBytes: number, log: Logger) {
    this.topic = topic;
    this.id = id;
    this.dir = dir;
    this.segmentBytes = segmentBytes;
    this.log = log;
  }

  /** Reads every segment, checking each frame; a torn tail of the last segment is cut off. */
  async open(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    const files = readdirSync(this.dir)
      .filter((f) => /^\d{20}\.log$/.test(f))
      .sort();
    for (const [i, f] of files.entries()) {
      const path = join(this.dir, f);
      const base = Number(f.slice(0, 20));
      const fh = await open(path, 'r+');
      const buf = await fh.readFile();
      const positions: number[] = [];
      let pos = 0;
      for (;;) {
        const n = frameAt(buf, pos);
        if (n <= 0) break;
        positions.push(pos);
        pos += n;
      }
      if (pos < buf.length) {
        if (i < files.length - 1) {
          await fh.close();
          throw new Error(`embedded log: ${path} is damaged at byte ${pos} (not its tail); refusing to start`);
        }
        // Only a write that was never acknowledged can be torn: send resolves after fdatasync.
        this.log.warn(
          { topic: this.topic, partition: this.id, file: path, bytes: buf.length - pos },
          'embedded log: cut an unacknowledged torn tail',
        );
        await fh.truncate(pos);
        await fh.datasync();
      }
      const expected = this.segments.length ? this.end() : base;
      if (base !== expected) {
        await fh.close();
        throw new Error(`embedded log: ${path} starts at offset ${base}, expected ${expected}`);
      }
      this.segments.push({ base, path, fh, size: pos, positions, lastWrite: statSync(path).mtimeMs });
    }
    if (!this.segments.length) await this.newSegment(0);
  }

  /**
   * The offset after the last record. Records are added to a segment only once written and
   * fdatasync'd, so every offset below it is durable: the only ones consumers see.
   */
  end(): number {
    const s = this.segments.at(-1);
    return s ? s.base + s.positions.length : 0;
  }

  /** The oldest offset still stored. */
  start(): number {
    return this.segments[0]?.base ?? 0;
  }

  private async newSegment(base: number): Promise<Segment> {
    const path = join(this.dir, segmentName(base));
    const fh = await open(path, 'a+');
    await syncDir(this.dir);
    const s: Segment = { base, path, fh, size: 0, positions: [], lastWrite: Date.now() };
    this.segments.push(s);
    return s;
  }

  /** Resolves once the frames are durable. Concurrent appends share one write and one fdatasync. */
  append(frames: Buffer[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ frames, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.pending.length) {
      const batch = this.pending.splice(0);
      let seg = this.segments.at(-1) as Segment;
      try {
        if (seg.size >= this.segmentBytes && seg.positions.length) seg = await this.newSegment(this.end());
        const frames = batch.flatMap((b) => b.frames);
        const data = Buffer.concat(frames);
        let written = 0;
        while (written < data.length) {
          const { bytesWritten } = await seg.fh.write(data, written, data.length - written, seg.size + written);
          written += bytesWritten;
        }
        await seg.fh.datasync();
        let pos = seg.size;
        for (const f of frames) {
          seg.positions.push(pos);
          pos += f.length;
        }
        seg.size = pos;
        seg.lastWrite = Date.now();
        for (const b of batch) b.resolve();
        for (const l of [...this.listeners]) l();
      } catch (err) {
        // Nothing of this batch was acknowledged: cut whatever part of it reached the file.
        await seg.fh.truncate(seg.size).catch(() => undefined);
        for (const b of batch) b.reject(err);
      }
    }
    this.flushing = false;
  }

  /** Resolves when records at or past `offset` are readable, or when `signal` aborts. */
  waitFor(offset: number, signal: AbortSignal): Promise<void> {
    if (offset < this.end() || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.listeners.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.listeners.add(done);
      signal.addEventListener('abort', done);
    });
  }

  /** Durable records from `from` on, readable now. */
  backlog(from: number): number {
    return Math.max(0, this.end() - from);
  }

  /** Durable records from `from` on, at most one segment's worth per call. */
  async read(from: number, maxRecords = MAX_FETCH_RECORDS, maxBytes = MAX_FETCH_BYTES): Promise<StoredRecord[]> {
    const end = this.end();
    if (from >= end) return [];
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.segments[mid] as Segment).base <= from) lo = mid;
      else hi = mid - 1;
    }
    const seg = this.segments[lo] as Segment;
    const first = from - seg.base;
    const last = Math.min(seg.positions.length, end - seg.base, first + maxRecords); // exclusive index
    if (first < 0 || first >= last) return [];
    const startPos = seg.positions[first] as number;
    let stop = first + 1;
    while (stop < last && (seg.positions[stop] as number) - startPos < maxBytes) stop++;
    const endPos = stop < seg.positions.length ? (seg.positions[stop] as number) : seg.size;
    const buf = Buffer.allocUnsafe(endPos - startPos);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await seg.fh.read(buf, got, buf.length - got, startPos + got);
      if (bytesRead === 0) throw new Error(`embedded log: short read of ${seg.path}`);
      got += bytesRead;
    }
    const out: StoredRecord[] = [];
    for (let i = first; i < stop; i++) out.push(decode(buf, (seg.positions[i] as number) - startPos, seg.base + i));
    return out;
  }

  /**
   * Deletes closed segments last written before `before` whose records every group has read: all
   * below `readUpTo` (the lowest committed offset; undefined when no group reads the partition). A
   * record not yet handled is never deleted, however long the process was stopped or however old
   * a restored copy's files are.
   */
  async expire(before: number, readUpTo?: number): Promise<void> {
    const expired = (s: Segment) => s.lastWrite < before && (readUpTo === undefined || s.base + s.positions.length <= readUpTo);
    while (this.segments.length > 1 && expired(this.segments[0] as Segment)) {
      const s = this.segments.shift() as Segment;
      unlinkSync(s.path);
      this.log.info({ topic: this.topic, partition: this.id, segment: s.path }, 'embedded log: deleted an expired segment');
      // A read may still be using it; the unlinked file stays readable until closed.
      setTimeout(() => void s.fh.close().catch(() => undefined), 60_000).unref();
    }
  }

  async close(): Promise<void> {
    while (this.flushing || this.pending.length) await new Promise((r) => setTimeout(r, 5));
    for (const s of this.segments) await s.fh.close().catch(() => undefined);
    this.segments = [];
  }
}
