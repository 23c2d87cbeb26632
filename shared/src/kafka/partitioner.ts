// The partitioner of every Kafka producer: kafkajs's default (the Java client's), with murmur2 on
// 32-bit integers.
//
// A keyed record goes to partition murmur2(key) mod partitions, as the Java client and kafkajs put
// it, so an event keyed by its tenant lands where any Kafka client would put it: one key's records
// share a partition, and keep their order, whichever client writes them. kafkajs 2.2.4 computes
// murmur2 through its Long, a BigInt whose products it never truncates: several BigInts allocated
// per four key bytes, each longer than the last. Profiled under the benchmark's `tenants` and
// `hanging` load, that was 5% of the router's busy time and 2% of the sender's, before the garbage
// collection of those BigInts (docs/performance.md, "Partitioner hash on 32-bit integers"). Every operation of
// the hash keeps only its low 32 bits, so Math.imul gives the same value (tested against the Java
// client's figures and against kafkajs's own function).
import { randomInt } from 'node:crypto';
import type { ICustomPartitioner, PartitionerArgs } from 'kafkajs';

const M = 0x5bd1e995;
const SEED = 0x9747b28c;

/** Kafka's murmur2 (the Java client's `Utils.murmur2`) of `data`, as a signed 32-bit integer. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = SEED ^ length;
  const end = length & ~3;
  for (let i = 0; i < end; i += 4) {
    let k = (data[i] as number) | ((data[i + 1] as number) << 8) | ((data[i + 2] as number) << 16) | ((data[i + 3] as number) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // The last one to three bytes (the Java original's switch falls through from 3 to 1).
  const rest = length & 3;
  if (rest > 0) {
    if (rest === 3) h ^= (data[end + 2] as number) << 16;
    if (rest >= 2) h ^= (data[end + 1] as number) << 8;
    h ^= data[end] as number;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * The partition of a keyed record among `partitions`: the Java client's `toPositive(murmur2(key)) %
 * partitions`, a string key hashed as its UTF-8 bytes (as kafkajs does).
 */
export function partitionOfKey(key: Buffer | string, partitions: number): number {
  return (murmur2(Buffer.isBuffer(key) ? key : Buffer.from(key, 'utf8')) & 0x7fffffff) % partitions;
}

/**
 * kafkajs's DefaultPartitioner with the murmur2 above: the record's own partition when it names one,
 * the key's when it has a key, else the next available partition round-robin (from a random start
 * per topic, so producers do not all begin on partition 0).
 */
export const createPartitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>();
  return ({ topic, partitionMetadata, message }: PartitionerArgs): number => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key !== null && message.key !== undefined) return partitionOfKey(message.key, partitionMetadata.length);
    const next = ((counters.get(topic) ?? randomInt(2 ** 31)) + 1) & 0x7fffffff;
    counters.set(topic, next);
    const available = partitionMetadata.filter((p) => p.leader >= 0);
    if (available.length) return (available[next % available.length] as (typeof available)[number]).partitionId;
    return next % partitionMetadata.length;
  };
};
