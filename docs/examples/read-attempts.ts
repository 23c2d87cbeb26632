// Reading the attempts topic as an analyst (docs/operations.md, "Reading the attempts topic"):
// a consumer group of your own, so the services' groups are never disturbed, that prints per minute
// how many attempts succeeded and failed for each destination type and code, and writes every
// attempt as one JSON line to stdout when --raw is given.
//
//   KAFKA_BROKERS=127.0.0.1:9092 bash infra/run.sh node docs/examples/read-attempts.ts [--group analytics] [--from-end] [--raw] [--max N]
//
// A partition the group has no committed offset for is read from its beginning (from its end with
// --from-end): records that came while the consumer was stopped are read, not skipped.
//
// (infra/run.sh: the project's Node 24, which runs TypeScript as it is.)
//
// Records are the JSON of shared/schemas/attempt.schema.json, keyed by destination id (unique only
// within its tenant: a destination is tenant_id and destination_id). The same `id` twice is one
// attempt written twice: dropped here. Different ids for the same tenant, event, destination,
// attempt_number and manual are a delivery made twice (after a sender crash or a rebalance), two
// requests: both counted here (docs/operations.md, "Reading the attempts topic as an analyst").
// Uses kafkajs (a dependency of the project); any Kafka client in any language reads it the same.
import { parseArgs } from 'node:util';
import kafkajs from 'kafkajs';
// The project's fix to kafkajs 2.2.4, which otherwise wakes every millisecond while idle (its
// request queue re-arms a negative timeout; kafkajs issue 1751). Outside this repository, use a
// kafkajs with the fix or another client.
import '../../shared/src/kafka/kafkajs/idle-poll.ts';

const { values: args } = parseArgs({
  options: {
    group: { type: 'string', default: 'analytics-attempts' },
    'from-end': { type: 'boolean', default: false },
    raw: { type: 'boolean', default: false },
    /** Stop after this many records (0: run until Ctrl-C). */
    max: { type: 'string', default: '0' },
  },
});
const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
const topic = `${process.env.KAFKA_TOPIC_PREFIX ?? 'switchyard.'}attempts`;
const max = Number(args.max);

const kafka = new kafkajs.Kafka({ clientId: 'read-attempts', brokers, logLevel: kafkajs.logLevel.WARN });
const consumer = kafka.consumer({ groupId: args.group as string });
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: !args['from-end'] });

interface Attempt {
  id: string;
  destination_type: string;
  /** canceled (code CANCELED): not tried, its destination deleted, disabled or the event canceled. */
  status: 'success' | 'failed' | 'canceled';
  code: string;
  time: string;
}
const seen = new Set<string>();
const counts = new Map<string, number>();
let read = 0;
const report = () => {
  for (const [k, n] of [...counts].sort()) console.error(`${k} ${n}`);
  counts.clear();
};
const timer = setInterval(report, 60_000);

const stop = async () => {
  clearInterval(timer);
  report();
  await consumer.disconnect();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

await consumer.run({
  eachMessage: async ({ message }) => {
    const a = JSON.parse(message.value?.toString('utf8') ?? 'null') as Attempt;
    if (!seen.has(a.id)) {
      seen.add(a.id);
      if (seen.size > 100_000) seen.clear(); // bounded memory: duplicates arrive close together
      const key = `${a.time.slice(0, 16)} ${a.destination_type} ${a.status} ${a.code}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      if (args.raw) process.stdout.write(`${JSON.stringify(a)}\n`);
    }
    if (max > 0 && ++read >= max) setImmediate(stop);
  },
});
