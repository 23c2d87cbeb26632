/**
 * The embedded log: the `Bus` interface on local files, for the single-process embedded mode.
 *
 * Layout under `dir` (one process only: a lock file refuses a second one):
 *   <topic>/meta.json                 {"partitions": N}, fixed when the topic is created
 *   <topic>/<partition>/<base>.log    append-only segments; <base> is the offset of the first record
 *   __consumer_offsets.log            committed offsets of every group, appended, compacted at open
 *
 * A record is framed as u32 body length, u32 CRC-32 of the body, body; the body is f64 timestamp,
 * u32 key length, key, u32 headers length, headers (JSON), i32 value length (-1: null), value.
 * Offsets are implicit: the base of the segment plus the record's index in it.
 *
 * Guarantees, the same ones the services rely on from Kafka:
 * - `send` resolves only after the records are written and fdatasync'd; consumers see a record
 *   only from then on (the high watermark), so nothing a consumer saw can vanish in a crash.
 * - partition = CRC-32(key) % partitions, so one key's records stay in order.
 * - a group's committed offset is written and fdatasync'd before the commit completes; offsets are
 *   committed only below the lowest unfinished record (OffsetTracker), so after a crash the records
 *   from the committed offset on are delivered again (at least once).
 *
 * Limits: one consumer per group (no rebalancing: the process owns every partition); segments roll
 * at `segmentBytes` and whole closed segments older than `retentionMs` are deleted (time retention,
 * like Kafka's; a group further behind restarts at the oldest record left); an offset index is kept
 * in memory (one number per record of the retained log).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Logger } from '../log.ts';
import { coalesceBatches } from './coalesce.ts';
import {
  createCommitter,
  DELAYED_RELEASE_SLICE,
  decodeRecord,
  keyedDispatchOf,
  MERGED_BATCH_MAX_RECORDS,
  releaseSlackMs,
  releaseSlice,
} from './consume.ts';
import type {
  Bus,
  BusConsumer,
  BusProducer,
  ConsumeOptions,
  DelayedConsumeOptions,
  InRecord,
  KeyedConsumer,
  LagRow,
  OutRecord,
} from '../bus.ts';
import { OffsetTracker, retryInPlace } from './inflight.ts';
import { jsonOf } from './json-text.ts';
import { allTopics, type TopicDef, topicName } from './topics.ts';

export interface EmbeddedBusOptions {
  /** Directory of the log (created when missing). */
  dir: string;
  topicPrefix: string;
  /** Partitions of topics created from now on (existing topics keep theirs). */
  partitions: number;
  log: Logger;
  /** A segment is closed and a new one started past this size (default 64 MiB). */
  segmentBytes?: number;
  /** Closed segments whose last write is older than this are deleted (default 7 days). */
  retentionMs?: number;
}

const HEADER = 8; // u32 length + u32 crc
const MAX_FETCH_RECORDS = 1000;
const MAX_FETCH_BYTES = 1 << 20;
const OFFSETS_FILE = '__consumer_offsets.log';
const OFFSETS_COMPACT_BYTES = 8 << 20;

// ---------------------------------------------------------------------------------------------
// Directory lock: one process per data directory.

const held = new Set<string>();

/**
 * Takes `<dir>/.lock` for this process (its pid inside). A lock left by a dead process (after
 * SIGKILL or a power cut) is taken over; one held by a live process is an error.
 */
export function lockDirectory(dir: string): { release(): void } {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, '.lock');
  if (held.has(file)) throw new Error(`${dir} is already open in this process`);
  for (let i = 0; i < 2; i++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      held.add(file);
      return {
        release() {
          if (!held.delete(file)) return;
          try {
            unlinkSync(file);
          } catch {
            // already gone
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = Number(readFileSync(file, 'utf8').trim());
    // Our own pid in a lock we do not hold is stale too (a restarted container reuses pids).
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      throw new Error(`${dir} is in use by process ${pid} (embedded mode runs in one process); stop it, or remove ${file} if it is gone`);
    }
    unlinkSync(file);
  }
  throw new Error(`could not lock ${dir}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Makes a directory entry (a created or renamed file) durable. */
async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

function writeFileDurably(path: string, data: string | Buffer): Promise<void> {
  const tmp = `${path}.${randomUUID()}.tmp`;
  return (async () => {
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    renameSync(tmp, path);
    await syncDir(join(path, '..'));
  })();
}

// ---------------------------------------------------------------------------------------------
// Record framing

interface StoredRecord {
  offset: number;
  timestamp: number;
  key: string;
  headers: Record<string, string>;
  value: Buffer | null;
}

function encode(r: OutRecord, timestamp: number): Buffer {
  const key = Buffer.from(r.key ?? '', 'utf8');
  const headers = Buffer.from(JSON.stringify(r.headers ?? {}), 'utf8');
  // A Buffer is stored as is (dead letters keep the original bytes); anything else as JSON.
  const value = Buffer.isBuffer(r.value) ? r.value : r.value === undefined ? null : Buffer.from(jsonOf(r.value), 'utf8');
  const bodyLen = 8 + 4 + key.length + 4 + headers.length + 4 + (value?.length ?? 0);
  const buf = Buffer.allocUnsafe(HEADER + bodyLen);
  buf.writeUInt32BE(bodyLen, 0);
  let p = HEADER;
  buf.writeDoubleBE(timestamp, p);
  p += 8;
  buf.writeUInt32BE(key.length, p);
  p += 4;
  key.copy(buf, p);
  p += key.length;
  buf.writeUInt32BE(headers.length, p);
  p += 4;
  headers.copy(buf, p);
  p += headers.length;
  buf.writeInt32BE(value ? value.length : -1, p);
  p += 4;
  value?.copy(buf, p);
  buf.writeUInt32BE(crc32(buf.subarray(HEADER)), 4);
  return buf;
}

/** Length of the valid frame at `pos` of `buf`, 0 when incomplete, -1 when corrupt. */
function frameAt(buf: Buffer, pos: number): number {
  if (pos + HEADER > buf.length) return 0;
  const len = buf.readUInt32BE(pos);
  if (len < 20) return -1;
  if (pos + HEADER + len > buf.length) return 0;
  return crc32(buf.subarray(pos + HEADER, pos + HEADER + len)) === buf.readUInt32BE(pos + 4) ? HEADER + len : -1;
}

function decode(buf: Buffer, pos: number, offset: number): StoredRecord {
  let p = pos + HEADER;
  const timestamp = buf.readDoubleBE(p);
  p += 8;
  const keyLen = buf.readUInt32BE(p);
  p += 4;
  const key = buf.toString('utf8', p, p + keyLen);
  p += keyLen;
  const hLen = buf.readUInt32BE(p);
  p += 4;
  const headers = JSON.parse(buf.toString('utf8', p, p + hLen)) as Record<string, string>;
  p += hLen;
  const vLen = buf.readInt32BE(p);
  p += 4;
  const value = vLen < 0 ? null : Buffer.from(buf.subarray(p, p + vLen));
  return { offset, timestamp, key, headers, value };
}

function toInRecord<T>(topic: string, partition: number, r: StoredRecord): InRecord<T> {
  return decodeRecord({ topic, partition, offset: String(r.offset), key: r.key, headers: r.headers, timestamp: r.timestamp }, r.value);
}

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

class Partition {
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

  /** Deletes closed segments last written before `before`. */
  async expire(before: number): Promise<void> {
    while (this.segments.length > 1 && (this.segments[0] as Segment).lastWrite < before) {
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

// ---------------------------------------------------------------------------------------------
// Committed offsets of every group: an append-only file, replayed and compacted at open.

class OffsetStore {
  private readonly path: string;
  private fh: FileHandle | null = null;
  private size = 0;
  private readonly offsets = new Map<string, number>();
  private queue: Promise<void> = Promise.resolve();

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

  /** Resolves once the offsets are durable. */
  commit(group: string, entries: Array<{ topic: string; partition: number; offset: number }>): Promise<void> {
    if (!entries.length) return Promise.resolve();
    const next = this.queue.then(async () => {
      const fh = this.fh;
      if (!fh) throw new Error('embedded log is closed');
      const frame = OffsetStore.frame(entries.map((e) => [group, e.topic, e.partition, e.offset]));
      await fh.write(frame, 0, frame.length, this.size);
      await fh.datasync();
      this.size += frame.length;
      for (const e of entries) this.offsets.set(OffsetStore.id(group, e.topic, e.partition), e.offset);
      if (this.size > OFFSETS_COMPACT_BYTES) await this.compact();
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    await this.queue;
    await this.fh?.close();
    this.fh = null;
  }
}

// ---------------------------------------------------------------------------------------------

/** How the embedded consumers retry our own faults: logged, with waits cut short by closing. */
const retryFor = (log: Logger, signal: AbortSignal, where: Record<string, unknown>) => ({
  stopped: () => signal.aborted,
  wait: (ms: number) => sleep(ms, signal),
  failed: (err: unknown, attempt: number) => log.error({ err, ...where, attempt }, 'handler failed; will retry'),
});

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });

/** Opens (creating when missing) the embedded log under `opts.dir`. */
export async function createEmbeddedBus(opts: EmbeddedBusOptions): Promise<Bus> {
  const lock = lockDirectory(opts.dir);
  const segmentBytes = opts.segmentBytes ?? 64 << 20;
  const retentionMs = opts.retentionMs ?? 7 * 86_400_000;
  const name = (t: TopicDef) => topicName(opts.topicPrefix, t);
  const topics = new Map<string, Partition[]>();
  const offsets = new OffsetStore(opts.dir);
  const groups = new Set<string>();
  const consumers: BusConsumer[] = [];
  let closed = false;
  try {
    await offsets.open();
  } catch (err) {
    lock.release();
    throw err;
  }

  const topicDir = (full: string) => join(opts.dir, encodeURIComponent(full));

  async function openTopic(full: string, create: boolean): Promise<Partition[]> {
    const known = topics.get(full);
    if (known) return known;
    const dir = topicDir(full);
    const metaPath = join(dir, 'meta.json');
    let count: number;
    if (existsSync(metaPath)) {
      count = (JSON.parse(readFileSync(metaPath, 'utf8')) as { partitions: number }).partitions;
    } else if (create) {
      mkdirSync(dir, { recursive: true });
      count = opts.partitions;
      await writeFileDurably(metaPath, JSON.stringify({ partitions: count }));
      await syncDir(opts.dir);
    } else {
      throw new Error(`embedded log: unknown topic ${full} (topics are created by ensureTopics)`);
    }
    const parts: Partition[] = [];
    for (let p = 0; p < count; p++) {
      const part = new Partition(full, p, join(dir, String(p)), segmentBytes, opts.log);
      await part.open();
      parts.push(part);
    }
    topics.set(full, parts);
    return parts;
  }

  const expire = async () => {
    for (const parts of topics.values()) for (const p of parts) await p.expire(Date.now() - retentionMs);
  };
  const retention = setInterval(() => {
    expire().catch((err: unknown) => opts.log.warn({ err }, 'embedded log: retention failed'));
  }, 3_600_000);
  retention.unref();

  const claimGroup = (groupId: string) => {
    if (closed) throw new Error('embedded log is closed');
    if (groups.has(groupId)) throw new Error(`embedded log: group ${groupId} already has a consumer (one per group in embedded mode)`);
    groups.add(groupId);
  };

  /** Where a partition's reading starts: the committed offset, else the oldest (or newest) record. */
  const startOf = (groupId: string, p: Partition, fromBeginning: boolean) => {
    const c = offsets.get(groupId, p.topic, p.id);
    if (c === undefined) return fromBeginning ? p.start() : p.end();
    return Math.max(c, p.start());
  };

  return {
    async ensureTopics(list = allTopics()) {
      for (const t of list) await openTopic(name(t), true);
      await expire();
    },

    async producer() {
      const handle: BusProducer = {
        async sendMany(batches) {
          // One group commit (one fdatasync) covers the concurrent appends.
          await Promise.all(batches.map((b) => handle.send(b.topic, b.records)));
        },
        async send(topic, records) {
          if (records.length === 0) return;
          if (closed) throw new Error('embedded log is closed');
          const parts = await openTopic(name(topic), false);
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
    },

    async consume<T>(o: ConsumeOptions<T>) {
      // A broadcast reader starts at the end and commits nothing.
      if (o.broadcast) o = { ...o, groupId: `${o.groupId}.${randomUUID()}` };
      claimGroup(o.groupId);
      const log = opts.log.child({ group: o.groupId });
      const parts = (await Promise.all(o.topics.map((t) => openTopic(name(t), false)))).flat();
      const abort = new AbortController();
      const inflight = new Set<Promise<void>>();
      const states = parts.map((p) => ({
        p,
        tracker: new OffsetTracker(),
        committed: null as string | null,
        waiters: [] as Array<() => void>,
      }));

      const commit = createCommitter(
        () => states,
        (due) =>
          offsets.commit(
            o.groupId,
            due.map(({ st, offset }) => ({ topic: st.p.topic, partition: st.p.id, offset: Number(offset) })),
          ),
        (err) => log.error({ err }, 'embedded log: offset commit failed'),
      );
      const timer = o.handleBatch || o.broadcast ? null : setInterval(() => void commit(), o.commitIntervalMs ?? 500);
      timer?.unref();

      // Our own faults are retried in place until they pass, as with Kafka.
      const retrying = (what: () => Promise<void>, where: Record<string, unknown>) =>
        retryInPlace(what, retryFor(log, abort.signal, where));

      const dispatch = keyedDispatchOf(o, {
        untilDone: (what, record) => retrying(what, { topic: record.topic, partition: record.partition, offset: record.offset }),
      });

      type State = (typeof states)[number];
      const startAt = (st: State) => (o.broadcast ? st.p.end() : startOf(o.groupId, st.p, o.fromBeginning ?? true));

      // A batch consumer reads every partition in one loop and hands what they hold to one handler
      // call, as the Kafka bus merges a fetch's partitions: one transaction and one offset commit (one
      // fdatasync) a round, where a loop per partition made one each for every partition with a record
      // (docs/performance.md, "Embedded batch consumers: one call for every partition").
      const runBatches = async (handleBatch: NonNullable<typeof o.handleBatch>) => {
        if (!states.length) return; // nothing to wait for (a race of no waits would never end)
        const pos = new Map(states.map((st) => [st, startAt(st)]));
        const at = (st: State) => Math.max(pos.get(st) as number, st.p.start());
        const backlog = () => states.reduce((n, st) => n + st.p.backlog(at(st)), 0);
        const perPartition = Math.max(1, Math.min(MAX_FETCH_RECORDS, Math.floor(MERGED_BATCH_MAX_RECORDS / states.length)));
        // A merged call that fails is handled again partition by partition, so one partition's
        // failure is retried alone (coalesce.ts); the calls below are made in one turn, so they merge.
        const merged = coalesceBatches(handleBatch, MERGED_BATCH_MAX_RECORDS, (err, batches, records) =>
          log.warn({ err, batches, records }, 'merged batch failed; handling its batches one by one'),
        );
        while (!abort.signal.aborted) {
          if (backlog() === 0) {
            // Woken by the first partition with a record; the others' waits end with the round.
            const round = new AbortController();
            const signal = AbortSignal.any([abort.signal, round.signal]);
            await Promise.race(states.map((st) => st.p.waitFor(at(st), signal)));
            round.abort();
          }
          if (abort.signal.aborted) break;
          // Kafka's fetch wait: a batch smaller than a full read may wait to fill.
          if (o.batchWaitMs && backlog() < MERGED_BATCH_MAX_RECORDS) await sleep(o.batchWaitMs, abort.signal);
          if (abort.signal.aborted) break;
          const reads = await Promise.all(
            states
              .filter((st) => st.p.backlog(at(st)) > 0)
              .map(async (st) => ({
                st,
                records: (await st.p.read(at(st), perPartition)).map((r) => toInRecord<T>(st.p.topic, st.p.id, r)),
              })),
          );
          const batches = reads.filter((r) => r.records.length);
          const handled = await Promise.all(
            batches.map(({ st, records }) =>
              retrying(() => merged(records), { topic: st.p.topic, partition: st.p.id, offset: records[0]?.offset }),
            ),
          );
          const done = batches.filter((_, i) => handled[i]);
          for (const { st, records } of done) pos.set(st, Number((records.at(-1) as InRecord<T>).offset) + 1);
          if (!o.broadcast && done.length)
            await offsets.commit(
              o.groupId,
              done.map(({ st }) => ({ topic: st.p.topic, partition: st.p.id, offset: pos.get(st) as number })),
            );
          if (done.length < batches.length) break; // closing: what was not handled is read again at the next start
        }
      };

      const run = async (st: State) => {
        const { p } = st;
        let pos = startAt(st);
        while (!abort.signal.aborted) {
          await p.waitFor(pos, abort.signal);
          if (abort.signal.aborted) break;
          pos = Math.max(pos, p.start());
          for (const r of await p.read(pos)) {
            while (!dispatch.hasRoom(st) && !abort.signal.aborted) await dispatch.roomFreed(st);
            if (abort.signal.aborted) break;
            pos = r.offset + 1;
            await dispatch.run(toInRecord<T>(p.topic, p.id, r), st, inflight, r.value?.length ?? 0);
          }
        }
      };
      const loops = o.handleBatch
        ? [runBatches(o.handleBatch.bind(o)).catch((err: unknown) => log.error({ err }, 'embedded log: consumer loop failed'))]
        : states.map((st) =>
            run(st).catch((err: unknown) => {
              log.error({ err, topic: st.p.topic, partition: st.p.id }, 'embedded log: consumer loop failed');
            }),
          );

      let closing: Promise<void> | null = null;
      const handle: KeyedConsumer = {
        divertsNow: (key) => dispatch.divertsNow(key),
        close() {
          closing ??= (async () => {
            abort.abort();
            for (const st of states) for (const w of st.waiters.splice(0)) w();
            await Promise.allSettled(loops);
            await Promise.allSettled([...inflight]);
            if (timer) clearInterval(timer);
            dispatch.close();
            if (!o.broadcast) await commit();
            groups.delete(o.groupId);
          })();
          return closing;
        },
      };
      consumers.push(handle);
      return handle;
    },

    async consumeDelayed<T>(o: DelayedConsumeOptions<T>) {
      claimGroup(o.groupId);
      const log = opts.log.child({ group: o.groupId });
      const abort = new AbortController();
      const loops: Promise<void>[] = [];
      for (const t of o.topics) {
        const delay = o.delayMs(t);
        for (const p of await openTopic(name(t), false)) {
          loops.push(
            (async () => {
              let pos = startOf(o.groupId, p, true);
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
                    await offsets.commit(o.groupId, [{ topic: p.topic, partition: p.id, offset: last.offset + 1 }]);
                    pos = last.offset + 1;
                  },
                );
              while (!abort.signal.aborted) {
                await p.waitFor(pos, abort.signal);
                if (abort.signal.aborted) return;
                pos = Math.max(pos, p.start());
                // Each topic has one delay, so a partition is in due order: the due records lead.
                const records = await p.read(pos, DELAYED_RELEASE_SLICE);
                const now = Date.now();
                const firstLater = records.findIndex((r) => r.timestamp + delay > now);
                const due = firstLater < 0 ? records : records.slice(0, firstLater);
                if (due.length && !(await retryInPlace(() => release(due), retryFor(log, abort.signal, where)))) return;
                const next = firstLater < 0 ? undefined : records[firstLater];
                if (!next) continue;
                // Not due: wait for it (and those due soon after: releaseSlackMs, as with Kafka), then
                // read again from it. A loop, since timers may fire a millisecond early by the wall clock.
                const resumeAt = next.timestamp + delay + releaseSlackMs(delay);
                for (let wait = resumeAt - Date.now(); wait > 0 && !abort.signal.aborted; wait = resumeAt - Date.now()) {
                  await sleep(wait, abort.signal);
                }
              }
            })().catch((err: unknown) => log.error({ err, topic: p.topic, partition: p.id }, 'embedded log: delayed consumer loop failed')),
          );
        }
      }
      let closing: Promise<void> | null = null;
      const handle: BusConsumer = {
        close() {
          closing ??= (async () => {
            abort.abort();
            await Promise.allSettled(loops);
            groups.delete(o.groupId);
          })();
          return closing;
        },
      };
      consumers.push(handle);
      return handle;
    },

    async lag(groups) {
      const rows: LagRow[] = [];
      for (const { groupId, topics: defs } of groups) {
        for (const def of defs) {
          for (const p of topics.get(name(def)) ?? []) {
            rows.push({ groupId, topic: def.name, partition: p.id, lag: Math.max(0, p.end() - startOf(groupId, p, true)) });
          }
        }
      }
      return rows;
    },

    async ping() {
      if (closed) throw new Error('embedded log is closed');
    },

    async close() {
      if (closed) return;
      // Consumers first: in-flight work still writes its results while finishing.
      await Promise.allSettled(consumers.splice(0).map((c) => c.close()));
      closed = true;
      clearInterval(retention);
      for (const parts of topics.values()) for (const p of parts) await p.close();
      await offsets.close();
      lock.release();
    },
  };
}
