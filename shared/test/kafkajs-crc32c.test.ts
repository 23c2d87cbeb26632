// kafkajs's record batches get their CRC-32C from shared/src/kafka/kafkajs/crc32c.ts, with the same
// result as kafkajs's own (the broker refuses a batch whose CRC is wrong, so every test that
// produces to the real broker checks it too).
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import t from 'tap';
import '../src/kafka/index.ts';

const require = createRequire(import.meta.url);
// What loading the Kafka module alone put in kafkajs's CRC module's place (read before this file
// imports kafkajs/crc32c.ts itself, which would install it too).
const installedByKafkaModule: unknown = require.cache[require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js')]?.exports;
const { crc32c, KAFKAJS_CRC_MODULE } = await import('../src/kafka/kafkajs/crc32c.ts');
// kafkajs's own implementation, the file its replaced module wraps.
const kafkajsCrc = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (b: Buffer) => number;

t.test('the check value of CRC-32C', async (t) => {
  t.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
  t.equal(crc32c(Buffer.alloc(0)), 0);
  t.equal(crc32c(Buffer.alloc(32)), 0x8a9136aa, '32 zero bytes (RFC 3720 B.4)');
  t.equal(crc32c(Buffer.alloc(32, 0xff)), 0x62a8ab43, '32 bytes of 0xff (RFC 3720 B.4)');
});

t.test('the same as kafkajs for every length around the 8-byte steps, and at odd offsets', async (t) => {
  const big = randomBytes(70_000);
  let mismatches = 0;
  for (let len = 0; len <= 64; len++) {
    for (const offset of [0, 1, 3, 7]) {
      const b = big.subarray(offset, offset + len);
      if (crc32c(b) !== kafkajsCrc(b) >>> 0) mismatches++;
    }
  }
  t.equal(mismatches, 0);
  t.equal(crc32c(big), kafkajsCrc(big) >>> 0, 'a 70 kB buffer');
  t.equal(crc32c(big.subarray(5, 60_003)), kafkajsCrc(big.subarray(5, 60_003)) >>> 0);
});

t.test("kafkajs's RecordBatch uses it", async (t) => {
  t.equal(installedByKafkaModule, crc32c, 'loading the Kafka module installs it');
  t.equal(require(KAFKAJS_CRC_MODULE), crc32c, 'the require cache holds this function in place of kafkajs’s');
  const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js') as {
    RecordBatch: (o: { records: unknown[] }) => Promise<{ buffer: Buffer }>;
  };
  const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (o: object) => unknown;
  const value = Buffer.from(JSON.stringify({ id: 'e1', data: 'x'.repeat(300) }));
  const batch = await RecordBatch({ records: [Record({ key: Buffer.from('tenant'), value, headers: {} })] });
  // firstOffset (8 bytes), length (4), partitionLeaderEpoch (4), magic (1), then the CRC (4) of the rest.
  t.equal(batch.buffer.readUInt32BE(17), kafkajsCrc(batch.buffer.subarray(21)) >>> 0, 'the CRC written is kafkajs’s own');
  const v0 = require.cache[require.resolve('kafkajs/src/protocol/recordBatch/v0/index.js')];
  const child = v0?.children.find((c) => c.id === KAFKAJS_CRC_MODULE);
  t.equal(child?.exports, crc32c, 'the RecordBatch module was linked to this function');
});
