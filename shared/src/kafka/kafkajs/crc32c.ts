// A faster CRC-32C for kafkajs 2.2.4, installed once when shared/src/kafka/index.ts loads.
//
// Every record batch kafkajs produces carries a CRC-32C of its body, which kafkajs computes in
// JavaScript one byte at a time (src/protocol/recordBatch/crc32C). Timed inside the services in the
// benchmark's `single` scenario, that was 7-8 ns a byte and 20 µs of each delivery, 12.6 of them in
// the router (its records carry the event). This one reads eight bytes a step through eight tables
// ("slicing-by-8"): 1.2-1.5 ns a byte there, 3.5 µs a delivery (docs/performance.md,
// "CRC-32C eight bytes a step"). The result is the same, and the broker checks every batch's CRC.
//
// kafkajs's RecordBatch loads its CRC module when the first produce request is encoded, so this
// module puts its function into the require cache in that module's place before then. The services'
// produce requests are written by produce-writer.ts, which calls crc32c itself; the copy in
// kafkajs's place serves the requests left to kafkajs's own encoder. Remove it if kafkajs computes
// the CRC natively.
import { createRequire, Module } from 'node:module';
import { assertPatchedKafkajs } from './version.ts';

assertPatchedKafkajs('crc32c.ts');

const POLY = 0x82f63b78; // Castagnoli, reflected
const T = new Int32Array(8 * 256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? POLY ^ (c >>> 1) : c >>> 1;
  T[n] = c;
}
for (let n = 0; n < 256; n++) {
  let c = T[n] as number;
  for (let k = 1; k < 8; k++) {
    c = (T[c & 0xff] as number) ^ (c >>> 8);
    T[k * 256 + n] = c;
  }
}

/** CRC-32C (Castagnoli) of `buf`, as an unsigned 32-bit integer, as kafkajs's own returns it. */
export function crc32c(buf: Uint8Array): number {
  let crc = -1;
  let i = 0;
  const len = buf.length;
  const end = len - (len & 7);
  // Eight bytes a step while eight remain, then the rest one at a time.
  while (i < end) {
    const a = ((buf[i] as number) | ((buf[i + 1] as number) << 8) | ((buf[i + 2] as number) << 16) | ((buf[i + 3] as number) << 24)) ^ crc;
    crc =
      (T[1792 + (a & 0xff)] as number) ^
      (T[1536 + ((a >>> 8) & 0xff)] as number) ^
      (T[1280 + ((a >>> 16) & 0xff)] as number) ^
      (T[1024 + (a >>> 24)] as number) ^
      (T[768 + (buf[i + 4] as number)] as number) ^
      (T[512 + (buf[i + 5] as number)] as number) ^
      (T[256 + (buf[i + 6] as number)] as number) ^
      (T[buf[i + 7] as number] as number);
    i += 8;
  }
  while (i < len) crc = (T[(crc ^ (buf[i++] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

const require = createRequire(import.meta.url);
/** The module kafkajs's RecordBatch requires for its CRC (`require('../crc32C')`). */
export const KAFKAJS_CRC_MODULE = require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js');

// Marked on the function, not here: two copies of this module (sources and a built tree in one
// process) install the one function once.
const INSTALLED = Symbol.for('switchyard.kafkajs.crc32c');
type Marked = ((buf: Uint8Array) => number) & { [INSTALLED]?: true };

const cached = require.cache[KAFKAJS_CRC_MODULE];
if (cached === undefined) {
  const m = new Module(KAFKAJS_CRC_MODULE);
  m.filename = KAFKAJS_CRC_MODULE;
  m.loaded = true;
  (crc32c as Marked)[INSTALLED] = true;
  m.exports = crc32c;
  require.cache[KAFKAJS_CRC_MODULE] = m;
} else if (!(cached.exports as Marked)[INSTALLED]) {
  // Something loaded kafkajs's own before this module: that process keeps the slower CRC (the
  // result is the same). Services cannot get here: index.ts imports this before any produce.
  process.emitWarning('kafkajs CRC-32C was loaded before shared/src/kafka/kafkajs/crc32c.ts: not replaced', {
    code: 'SWITCHYARD_KAFKAJS_CRC',
  });
}
