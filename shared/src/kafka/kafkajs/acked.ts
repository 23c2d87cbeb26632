// Which records a Kafka broker acknowledged, seen inside kafkajs 2.2.4, so that a write across a
// failure writes each record exactly once; installed once when shared/src/kafka/index.ts loads
// (through ./index.ts).
//
// kafkajs's send (src/producer/sendMessages.js) writes one produce request per partition leader. When
// one of them fails it refreshes the metadata and tries again, keeping the answers of the brokers
// that have answered, keyed by broker: a broker that has an answer is left out of the retry. Two
// ways that goes wrong:
// - Records sent to nobody: if the failed broker's partitions now have as leader a broker that
//   already answered (the leader was killed or is stopping, and a follower took over), their records
//   go in no request, and the send resolves as if they were written. In the cluster fault suite that
//   lost accepted events when the leader of the busiest events partition was killed
//   (docs/operations.md, "Faults of a cluster, measured"). Upstream:
//   https://github.com/tulios/kafkajs/issues/1303 (open), and the proposed fix #1798.
// - Records written twice: the retry starts as soon as one request fails, while another broker's
//   may still wait for its answer. That broker has no answer yet, so the retry builds it a second
//   request with the same records, sent once the first is answered (an idempotent producer sends a
//   broker one request at a time) and numbered as new records: the broker writes them again.
//
// kafkajs hands the caller's message objects through to the produce request unchanged, so this
// marks each message of a request a broker answered without error (kafkajs throws on any error
// code), and a later request leaves out each partition whose records are all marked. The adapter
// (../producer.ts) sends again the records of a resolved send no broker took, and retires a
// producer whose request left a partition out: kafkajs had numbered that partition's records, so
// its sequence numbers are ahead of the broker's.
// Remove this module when moving off kafkajs 2.2.4, or when kafkajs ships the fix.
import { createRequire } from 'node:module';
import { assertPatchedKafkajs } from './version.ts';

assertPatchedKafkajs('acked.ts');

type TopicData = Array<{ partitions: Array<{ messages: object[] }> }>;
interface ProduceArgs {
  topicData: TopicData;
}
interface BrokerInternals {
  produce(args: ProduceArgs): Promise<unknown>;
}
interface Marks {
  /** Messages of a request a broker answered without error. */
  acked: WeakSet<object>;
  /** Messages left out of a later request because a broker had acknowledged them. */
  withheld: WeakSet<object>;
}

const require = createRequire(import.meta.url);
const Broker = require('kafkajs/src/broker/index.js') as { prototype: BrokerInternals };

/** The request without the partitions whose records a broker has acknowledged, marking those. */
function unanswered(topicData: TopicData, marks: Marks): TopicData {
  const answered = (p: { messages: object[] }) => p.messages.length > 0 && p.messages.every((m) => marks.acked.has(m));
  if (!topicData.some((t) => t.partitions.some(answered))) return topicData;
  const left: TopicData = [];
  for (const topic of topicData) {
    const partitions = topic.partitions.filter((p) => !answered(p));
    for (const p of topic.partitions) if (answered(p)) for (const m of p.messages) marks.withheld.add(m);
    if (partitions.length) left.push({ ...topic, partitions });
  }
  return left;
}

// Kept on kafkajs's prototype, not here: two copies of this module (sources and a built tree in one
// process) share the one kafkajs and its record of answers.
const MARKS = Symbol.for('switchyard.kafkajs.acked');
const proto = Broker.prototype as BrokerInternals & { [MARKS]?: Marks };
if (!proto[MARKS]) {
  const produce = proto.produce;
  if (typeof produce !== 'function') {
    // Fail loudly: a kafkajs upgrade moved what this check relies on (review this module).
    throw new Error('kafkajs Broker internals changed: review shared/src/kafka/kafkajs/acked.ts');
  }
  const marks: Marks = { acked: new WeakSet(), withheld: new WeakSet() };
  proto.produce = async function (this: BrokerInternals, args: ProduceArgs) {
    const topicData = unanswered(args.topicData, marks);
    // Every partition answered already: an answer naming none (kafkajs reads only its topics).
    if (!topicData.length) return { topics: [], throttleTime: 0 };
    const response = await produce.call(this, topicData === args.topicData ? args : { ...args, topicData });
    for (const t of topicData) for (const p of t.partitions) for (const m of p.messages) marks.acked.add(m);
    return response;
  };
  proto[MARKS] = marks;
}
const marks = proto[MARKS] as Marks;

/** Whether a broker acknowledged a produce request holding this very message object. */
export function acknowledged(message: object): boolean {
  return marks.acked.has(message);
}

/** Whether a request left this message out, a broker having acknowledged it in an earlier one. */
export function withheld(message: object): boolean {
  return marks.withheld.has(message);
}
