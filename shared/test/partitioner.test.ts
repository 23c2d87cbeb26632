// Every producer's partitioner (shared/src/kafka/partitioner.ts) puts a keyed record where the Java
// client and kafkajs's own DefaultPartitioner put it: murmur2 against the Java client's figures and
// kafkajs's function, and the whole partitioner against kafkajs's. The broker-backed check (records
// read back from the partition of their key) is in kafka-bus.test.ts.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Partitioners, type PartitionerArgs, type PartitionMetadata } from 'kafkajs';
import t from 'tap';
import { createPartitioner, murmur2, partitionOfKey } from '../src/kafka/partitioner.ts';

const require = createRequire(import.meta.url);
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2.js') as (key: Buffer | string) => number;

// org.apache.kafka.common.utils.Utils.murmur2 of each key's UTF-8 bytes, and toPositive(h) % 12, from
// kafka-clients 4.3.1 (run once with Java 17; the first six are also in Kafka's own UtilsTest).
const JAVA: Array<[string, number, number]> = [
  ['', 275646681, 9],
  ['a', -1563381124, 4],
  ['ab', 316155434, 2],
  ['abc', 479470107, 3],
  ['21', -973932308, 0],
  ['foobar', -790332482, 6],
  ['a-little-bit-long-string', -985981536, 8],
  ['a-little-bit-longer-string', -1486304829, 11],
  ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971, 5],
  ['ten_8f3c2a', 959222536, 4],
  ['des_01JDQ9Z8K3M4N5P6Q7R8S9T0VW', 1264264512, 0],
  ['tënant-ü-€-𝄞', 173309010, 6],
];

const meta = (n: number, down: number[] = []): PartitionMetadata[] =>
  Array.from({ length: n }, (_, partitionId) => ({
    partitionId,
    leader: down.includes(partitionId) ? -1 : 1,
    partitionErrorCode: 0,
    replicas: [1],
    isr: [1],
  }));
const args = (partitionMetadata: PartitionMetadata[], key: Buffer | string | null, partition?: number): PartitionerArgs => ({
  topic: 'tp',
  partitionMetadata,
  message: { key, value: 'v', ...(partition === undefined ? {} : { partition }) },
});

t.test("murmur2 and the key's partition are the Java client's", async (t) => {
  for (const [key, hash, of12] of JAVA) {
    t.equal(murmur2(Buffer.from(key, 'utf8')), hash, `murmur2(${JSON.stringify(key)})`);
    t.equal(partitionOfKey(key, 12), of12, `partition of ${JSON.stringify(key)} among 12`);
    t.equal(partitionOfKey(Buffer.from(key, 'utf8'), 12), of12, 'the same key as a Buffer');
  }
});

t.test("murmur2 is kafkajs's for every length around the 4-byte steps, random bytes and strings", async (t) => {
  let mismatches = 0;
  for (let len = 0; len <= 67; len++) {
    for (let i = 0; i < 20; i++) {
      const b = randomBytes(len);
      if (murmur2(b) !== kafkajsMurmur2(b)) mismatches++;
      // Characters from one to four UTF-8 bytes, surrogate pairs included.
      const s = Array.from({ length: len }, () => String.fromCodePoint([0x41, 0xe9, 0x20ac, 0x1d11e][i % 4] as number)).join('');
      if (murmur2(Buffer.from(s, 'utf8')) !== kafkajsMurmur2(s)) mismatches++;
    }
  }
  t.equal(mismatches, 0);
});

t.test("the partitioner picks kafkajs's DefaultPartitioner's partition for keyed and partitioned records", async (t) => {
  const ours = createPartitioner();
  const theirs = Partitioners.DefaultPartitioner();
  let mismatches = 0;
  for (let n = 1; n <= 50; n++) {
    for (let i = 0; i < 40; i++) {
      const key = i % 2 ? randomBytes(i) : `tenant_${randomBytes(6).toString('hex')}`;
      if (ours(args(meta(n), key)) !== theirs(args(meta(n), key))) mismatches++;
    }
  }
  t.equal(mismatches, 0);
  t.equal(ours(args(meta(12), 'abc', 7)), 7, 'a record that names its partition goes there, whatever its key');
  t.equal(ours(args(meta(12), null, 0)), 0);
  t.equal(ours(args(meta(12, [3]), 'abc')), 3, 'a key keeps its partition while that partition has no leader, as in Java');
});

t.test('records without a key go round the partitions that have a leader', async (t) => {
  const p = createPartitioner();
  const seen = Array.from({ length: 24 }, () => p(args(meta(6, [2, 4]), null)));
  t.same([...new Set(seen)].sort(), [0, 1, 3, 5], 'every available partition, none without a leader');
  for (let i = 1; i < seen.length; i++) if (seen[i] === seen[i - 1]) t.fail(`the same partition twice in a row at ${i}`);
  const other = Array.from({ length: 4 }, () => p({ ...args(meta(4), null), topic: 'other' }));
  t.same([...new Set(other)].sort(), [0, 1, 2, 3], 'each topic goes round on its own');
  t.ok(p(args(meta(3, [0, 1, 2]), null)) < 3, 'with no leader anywhere, still one of the partitions');
});
