// Which records a Kafka broker acknowledged, seen inside kafkajs 2.2.4; installed once when
// shared/src/kafka/index.ts loads (through ./index.ts).
//
// kafkajs's send (src/producer/sendMessages.js) writes one produce request per partition leader. When
// one of them fails it refreshes the metadata and tries again, keeping the answers of the brokers
// that succeeded, keyed by broker: a broker that has an answer is left out of the retry. If the
// failed broker's partitions now have as leader a broker that already answered (the leader was
// killed or is stopping, and a follower took over), their records are sent to nobody, and the send
// resolves as if they were written. In the cluster fault suite that lost accepted events when the
// leader of the busiest events partition was killed (docs/operations.md, "Faults of a cluster, measured").
// Upstream: https://github.com/tulios/kafkajs/issues/1303 (open), and the proposed fix #1798.
//
// kafkajs hands the caller's message objects through to the produce request unchanged, so marking
// each message of a request a broker answered without error tells the adapter which records of a
// resolved send no broker took; it sends those again (../producer.ts). A broker's answer is
// only returned here when every partition in it succeeded (kafkajs throws on any error code).
// Remove this module when moving off kafkajs 2.2.4, or when kafkajs ships the fix.
import { createRequire } from 'node:module';
import { assertPatchedKafkajs } from './version.ts';

assertPatchedKafkajs('acked.ts');

interface ProduceArgs {
  topicData: Array<{ partitions: Array<{ messages: object[] }> }>;
}
interface BrokerInternals {
  produce(args: ProduceArgs): Promise<unknown>;
}

const require = createRequire(import.meta.url);
const Broker = require('kafkajs/src/broker/index.js') as { prototype: BrokerInternals };

// Kept on kafkajs's prototype, not here: two copies of this module (sources and a built tree in one
// process) share the one kafkajs and its record of answers.
const ACKED = Symbol.for('switchyard.kafkajs.acked');
const proto = Broker.prototype as BrokerInternals & { [ACKED]?: WeakSet<object> };
if (!proto[ACKED]) {
  const produce = proto.produce;
  if (typeof produce !== 'function') {
    // Fail loudly: a kafkajs upgrade moved what this check relies on (review this module).
    throw new Error('kafkajs Broker internals changed: review shared/src/kafka/kafkajs/acked.ts');
  }
  const acked = new WeakSet<object>();
  proto.produce = async function (this: BrokerInternals, args: ProduceArgs) {
    const response = await produce.call(this, args);
    for (const t of args.topicData) for (const p of t.partitions) for (const m of p.messages) acked.add(m);
    return response;
  };
  proto[ACKED] = acked;
}
const acked = proto[ACKED] as WeakSet<object>;

/** Whether a broker acknowledged a produce request holding this very message object. */
export function acknowledged(message: object): boolean {
  return acked.has(message);
}
