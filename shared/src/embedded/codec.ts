// Record framing of the embedded log's segments: u32 body length, u32 CRC-32 of the body, body.
import { crc32 } from 'node:zlib';
import type { InRecord, OutRecord } from '../bus/index.ts';
import { decodeRecord, jsonOf } from '../bus/record-codec.ts';

export const HEADER = 8; // u32 length + u32 crc

// ---------------------------------------------------------------------------------------------
// Record framing

export interface StoredRecord {
  offset: number;
  timestamp: number;
  key: string;
  headers: Record<string, string>;
  value: Buffer | null;
}

export function encode(r: OutRecord, timestamp: number): Buffer {
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
export function frameAt(buf: Buffer, pos: number): number {
  if (pos + HEADER > buf.length) return 0;
  const len = buf.readUInt32BE(pos);
  if (len < 20) return -1;
  if (pos + HEADER + len > buf.length) return 0;
  return crc32(buf.subarray(pos + HEADER, pos + HEADER + len)) === buf.readUInt32BE(pos + 4) ? HEADER + len : -1;
}

export function decode(buf: Buffer, pos: number, offset: number): StoredRecord {
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
  // A view of the read, not a copy: toInRecord parses it and lets it go; one kept as bytes (keepRaw,
  // a dead letter) holds the read's buffer only while its batch is handled.
  const value = vLen < 0 ? null : buf.subarray(p, p + vLen);
  return { offset, timestamp, key, headers, value };
}

export function toInRecord<T>(topic: string, partition: number, r: StoredRecord, keepRaw = false): InRecord<T> {
  return decodeRecord(
    { topic, partition, offset: String(r.offset), key: r.key, headers: r.headers, timestamp: r.timestamp },
    r.value,
    keepRaw,
  );
}
