// Produce requests for kafkajs 2.2.4 written in one pass, installed once when shared/src/kafka/index.ts loads.
//
// kafkajs encodes a produce request level by level: each record into a zero-filled buffer of its own
// (and each of its varints into another), the records into a batch, the batch into an outer buffer,
// that into its partition's, its topic's and the request's; each level grows its buffer by doubling
// and copies the one below into it. In the router's profile these allocations and copies took 11% of
// its busy time, besides their share of its garbage collection (docs/performance.md, "Produce
// requests written in one buffer"). produce-writer.ts measures the request first, then writes it into one
// buffer; this module puts it in the place of kafkajs's own.
//
// The bytes are kafkajs's own (shared/test/kafkajs-produce.test.ts compares them), and the broker
// checks each batch's CRC. Only what the services send takes this path: no compression, no
// per-message timestamps, keys, values and header values that are strings or Buffers. Any other
// request goes to kafkajs's own encoder. Produce v4-v7 (Kafka 4 speaks 3 and up) wrap v3's module,
// which they load at the first produce, so putting this function in its place before then is enough.
// Remove this module when moving off kafkajs 2.2.4.
import { createRequire } from 'node:module';
import { measure, type ProduceArgs, write } from './produce-writer.ts';
import { assertPatchedKafkajs } from './version.ts';

assertPatchedKafkajs('produce.ts');

interface EncoderLike {
  buf: Buffer;
  offset: number;
}
/** A request as kafkajs's network layer takes it. */
export interface ProduceRequest {
  apiKey: number;
  apiVersion: number;
  apiName: string;
  expectResponse: () => boolean;
  encode: () => Promise<EncoderLike>;
}
type ProduceModule = (args: ProduceArgs) => ProduceRequest;

const require = createRequire(import.meta.url);
/** kafkajs's produce request v3 module, which v4-v7 build on. */
export const KAFKAJS_PRODUCE_MODULE = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js');
const Encoder = require('kafkajs/src/protocol/encoder.js') as { prototype: object };
const API_KEY = (require('kafkajs/src/protocol/requests/apiKeys.js') as { Produce: number }).Produce;

/** kafkajs's Encoder holding `buf`, as the network layer expects `encode()` to return. */
function asEncoder(buf: Buffer): EncoderLike {
  return Object.assign(Object.create(Encoder.prototype) as EncoderLike, { buf, offset: buf.length });
}

const INSTALLED = Symbol.for('switchyard.kafkajs.produce-v3');
type Marked = ProduceModule & { [INSTALLED]?: true };

/** kafkajs's own produce v3 module, for the requests this writer leaves to it. */
export const kafkajsProduce: ProduceModule = (() => {
  const cached = require.cache[KAFKAJS_PRODUCE_MODULE];
  const own = (cached?.exports as Marked | undefined) ?? (require(KAFKAJS_PRODUCE_MODULE) as Marked);
  return own[INSTALLED] ? (own as unknown as { kafkajs: ProduceModule }).kafkajs : own;
})();

/** The module installed in kafkajs's produce v3 module's place. */
export const produceRequest: Marked & { kafkajs: ProduceModule } = Object.assign(
  (args: ProduceArgs): ProduceRequest => {
    const measured = measure(args);
    if (!measured) return kafkajsProduce(args);
    return {
      apiKey: API_KEY,
      apiVersion: 3,
      apiName: 'Produce',
      expectResponse: () => args.acks !== 0,
      encode: async () => asEncoder(write(args, measured, Date.now)),
    };
  },
  { kafkajs: kafkajsProduce, [INSTALLED]: true as const },
);

// Installed only on the kafkajs whose bytes this writer reproduces (assertPatchedKafkajs above).
const entry = require.cache[KAFKAJS_PRODUCE_MODULE];
if (entry && !(entry.exports as Marked)[INSTALLED]) {
  // The later versions take v3's module when they load; one already loaded keeps kafkajs's.
  for (const v of [4, 5, 6, 7]) {
    if (require.cache[require.resolve(`kafkajs/src/protocol/requests/produce/v${v}/request.js`)]) {
      process.emitWarning(`kafkajs produce v${v} was loaded before shared/src/kafka/kafkajs/produce.ts: not replaced`, {
        code: 'SWITCHYARD_KAFKAJS_PRODUCE',
      });
    }
  }
  entry.exports = produceRequest;
}
