// The one-pass writer of produce.ts: a produce request (v3, which v4-v7 wrap) measured, then written
// into one buffer, byte for byte as kafkajs 2.2.4's own module writes it (shared/test/kafkajs-produce.test.ts
// compares them). Only what the services send: no compression, no per-message timestamps, keys,
// values and header values that are strings or Buffers; `measure` answers null for anything else.
import { createRequire } from 'node:module';
import { crc32c } from './crc32c.ts';
import { assertPatchedKafkajs } from './version.ts';

assertPatchedKafkajs('produce-writer.ts');

type Bytes = string | Buffer;
interface Message {
  key?: unknown;
  value?: unknown;
  headers?: unknown;
  timestamp?: unknown;
}
interface PartitionData {
  partition: number;
  firstSequence?: number;
  messages: Message[];
}
interface TopicData {
  topic: string;
  partitions: PartitionData[];
}
/** What kafkajs's produce module is called with (src/protocol/requests/produce/v3/request.js). */
export interface ProduceArgs {
  acks: number;
  timeout: number;
  transactionalId?: string | null;
  producerId?: unknown;
  producerEpoch?: number;
  compression?: number;
  topicData: TopicData[];
}

const require = createRequire(import.meta.url);
const Long = require('kafkajs/src/utils/long.js') as {
  fromValue(v: unknown): { getHighBits(): number; getLowBits(): number };
};
const COMPRESSION_NONE = 0;
const TRANSACTIONAL_ATTRIBUTE = 16;
const MAGIC_BYTE = 2;
const TWO_32 = 2 ** 32;

const isBytes = (v: unknown): v is Bytes => typeof v === 'string' || Buffer.isBuffer(v);
const isOptionalBytes = (v: unknown): v is Bytes | null | undefined => v == null || isBytes(v);

// Varints as Kafka's records carry them: zigzag, then seven bits a byte, lowest first.
const zigzag = (v: number): number => (v << 1) ^ (v >> 31);
function sizeOfVarInt(v: number): number {
  let u = zigzag(v);
  let n = 1;
  while ((u & 0xffffff80) !== 0) {
    n++;
    u >>>= 7;
  }
  return n;
}
function writeVarInt(buf: Buffer, at: number, v: number): number {
  let u = zigzag(v);
  while ((u & 0xffffff80) !== 0) {
    buf[at++] = (u & 0x7f) | 0x80;
    u >>>= 7;
  }
  buf[at++] = u;
  return at;
}
const lengthOf = (v: Bytes): number => (typeof v === 'string' ? Buffer.byteLength(v) : v.length);
/** A varint length and the bytes, or the length -1 for null. */
const sizeOfField = (len: number): number => (len < 0 ? 1 : sizeOfVarInt(len) + len);
function writeBytes(buf: Buffer, at: number, v: Bytes): number {
  return typeof v === 'string' ? at + buf.write(v, at, 'utf8') : at + v.copy(buf, at);
}
function writeInt64(buf: Buffer, at: number, v: unknown): number {
  const long = Long.fromValue(v);
  buf.writeInt32BE(long.getHighBits(), at);
  buf.writeInt32BE(long.getLowBits(), at + 4);
  return at + 8;
}
function writeTimestamp(buf: Buffer, at: number, ms: number): number {
  buf.writeUInt32BE(Math.floor(ms / TWO_32), at);
  buf.writeUInt32BE(ms >>> 0, at + 4);
  return at + 8;
}
/**
 * A header list as kafkajs flattens it (an array value gives one header per element), or null when
 * a value is neither a string nor a Buffer.
 */
function headerPairs(headers: unknown): [string, Bytes][] | null {
  if (headers === undefined) return [];
  if (headers === null || typeof headers !== 'object') return null;
  const pairs: [string, Bytes][] = [];
  for (const [k, v] of Object.entries(headers)) {
    if (!Array.isArray(v)) {
      if (!isBytes(v)) return null;
      pairs.push([k, v]);
      continue;
    }
    for (const e of v) {
      if (!isBytes(e)) return null;
      pairs.push([k, e]);
    }
  }
  return pairs;
}

// Fixed parts of a partition's entry: partition and record-set size (4 + 4), then the record batch:
// firstOffset 8, length 4, partitionLeaderEpoch 4, magic 1, CRC 4, and the CRC'd body's header
// (attributes 2, lastOffsetDelta 4, firstTimestamp 8, maxTimestamp 8, producerId 8, producerEpoch 2,
// firstSequence 4, record count 4).
const BATCH_HEAD = 8 + 4 + 4 + 1 + 4;
const BODY_HEAD = 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4;

/** A request measured: its size and, in the order they are written, the lengths and headers. */
export interface Measured {
  size: number;
  /** For each record: its body's size, the key's and the value's byte lengths (-1 for null), then each header's key and value. */
  lens: number[];
  headersOf: [string, Bytes][][];
}

/**
 * The request measured, or null when some part of it is of a shape this writer does not reproduce
 * (compression, a message timestamp, a key, value or header that is neither a string nor a Buffer).
 */
export function measure(args: ProduceArgs): Measured | null {
  if ((args.compression ?? COMPRESSION_NONE) !== COMPRESSION_NONE) return null;
  const transactionalId = args.transactionalId ?? null;
  if (transactionalId !== null && typeof transactionalId !== 'string') return null;
  const lens: number[] = [];
  const headersOf: [string, Bytes][][] = [];
  let size = 2 + (transactionalId === null ? 0 : Buffer.byteLength(transactionalId)) + 2 + 4 + 4;
  for (const t of args.topicData) {
    if (typeof t.topic !== 'string') return null;
    size += 2 + Buffer.byteLength(t.topic) + 4;
    for (const p of t.partitions) {
      size += 4 + 4 + BATCH_HEAD + BODY_HEAD;
      for (let i = 0; i < p.messages.length; i++) {
        const m = p.messages[i] as Message;
        if (m.timestamp != null || !isOptionalBytes(m.key) || !isOptionalBytes(m.value)) return null;
        const headers = headerPairs(m.headers);
        if (headers === null) return null;
        const at = lens.length;
        lens.push(0);
        const key = m.key == null ? -1 : lengthOf(m.key);
        const value = m.value == null ? -1 : lengthOf(m.value);
        lens.push(key, value);
        headersOf.push(headers);
        // attributes 1, timestampDelta 1 (a varlong 0: no message carries a timestamp), offsetDelta.
        let body = 1 + 1 + sizeOfVarInt(i) + sizeOfField(key) + sizeOfField(value) + sizeOfVarInt(headers.length);
        for (const [hk, hv] of headers) {
          const kl = Buffer.byteLength(hk);
          const vl = lengthOf(hv);
          lens.push(kl, vl);
          body += sizeOfVarInt(kl) + kl + sizeOfVarInt(vl) + vl;
        }
        lens[at] = body;
        size += sizeOfVarInt(body) + body;
      }
    }
  }
  return { size, lens, headersOf };
}

/** The bytes of a measured request, as kafkajs's own v3 module writes them. */
export function write(args: ProduceArgs, { size, lens, headersOf }: Measured, now: () => number): Buffer {
  const transactionalId = args.transactionalId ?? null;
  const producerId = args.producerId ?? -1;
  const producerEpoch = args.producerEpoch ?? 0;
  const attributes = COMPRESSION_NONE | (transactionalId ? TRANSACTIONAL_ATTRIBUTE : 0);
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  let li = 0;
  let hi = 0;
  if (transactionalId === null) {
    at = buf.writeInt16BE(-1, at);
  } else {
    at = buf.writeInt16BE(Buffer.byteLength(transactionalId), at);
    at = writeBytes(buf, at, transactionalId);
  }
  at = buf.writeInt16BE(args.acks, at);
  at = buf.writeInt32BE(args.timeout, at);
  at = buf.writeInt32BE(args.topicData.length, at);
  for (const t of args.topicData) {
    at = buf.writeInt16BE(Buffer.byteLength(t.topic), at);
    at = writeBytes(buf, at, t.topic);
    at = buf.writeInt32BE(t.partitions.length, at);
    for (const p of t.partitions) {
      const ms = now();
      at = buf.writeInt32BE(p.partition, at);
      const recordSetSizeAt = at;
      at += 4;
      const recordSetStart = at;
      at = writeInt64(buf, at, 0); // firstOffset
      const batchLengthAt = at;
      at += 4;
      const batchStart = at;
      at = buf.writeInt32BE(0, at); // partitionLeaderEpoch
      at = buf.writeInt8(MAGIC_BYTE, at);
      const crcAt = at;
      at += 4;
      const bodyStart = at;
      at = buf.writeInt16BE(attributes, at);
      at = buf.writeInt32BE(p.messages.length - 1, at); // lastOffsetDelta
      at = writeTimestamp(buf, at, ms); // firstTimestamp
      at = writeTimestamp(buf, at, ms); // maxTimestamp
      at = writeInt64(buf, at, producerId);
      at = buf.writeInt16BE(producerEpoch, at);
      at = buf.writeInt32BE(p.firstSequence ?? 0, at);
      at = buf.writeInt32BE(p.messages.length, at);
      for (let i = 0; i < p.messages.length; i++) {
        const m = p.messages[i] as Message;
        at = writeVarInt(buf, at, lens[li++] as number);
        buf[at++] = 0; // attributes
        buf[at++] = 0; // timestampDelta
        at = writeVarInt(buf, at, i);
        const key = lens[li++] as number;
        at = writeVarInt(buf, at, key);
        if (key >= 0) at = writeBytes(buf, at, m.key as Bytes);
        const value = lens[li++] as number;
        at = writeVarInt(buf, at, value);
        if (value >= 0) at = writeBytes(buf, at, m.value as Bytes);
        const headers = headersOf[hi++] as [string, Bytes][];
        at = writeVarInt(buf, at, headers.length);
        for (const [hk, hv] of headers) {
          at = writeVarInt(buf, at, lens[li++] as number);
          at = writeBytes(buf, at, hk);
          at = writeVarInt(buf, at, lens[li++] as number);
          at = writeBytes(buf, at, hv);
        }
      }
      buf.writeUInt32BE(crc32c(buf.subarray(bodyStart, at)), crcAt);
      buf.writeInt32BE(at - batchStart, batchLengthAt);
      buf.writeInt32BE(at - recordSetStart, recordSetSizeAt);
    }
  }
  if (at !== size) throw new Error(`produce request measured ${size} bytes but wrote ${at}`);
  return buf;
}

/** The request's bytes as kafkajs's own v3 module writes them, or null for a shape left to kafkajs. */
export function encodeProduce(args: ProduceArgs, now: () => number = Date.now): Buffer | null {
  const measured = measure(args);
  return measured && write(args, measured, now);
}
