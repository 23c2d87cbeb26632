// How late a retry tier releases its records: a steady stream of 1 KB records written to one delay
// tier of the Kafka bus (12 partitions), each released by `consumeDelayed` and timed against its due
// time (written + delay). Records of the first 10 s are left out (the group forming). Needs a broker:
//   bash infra/run.sh node bench/tier-lateness.ts --brokers 127.0.0.1:9092 [--delay-ms 1000]
//     [--rate 1500] [--seconds 30] [--services-root DIR]
// --services-root measures another checkout's bus (bench/tree.sh), for an A/B of a change.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { sleep, summarize } from './lib/stats.ts';

const { values: opt } = parseArgs({
  options: {
    brokers: { type: 'string', default: '127.0.0.1:9092' },
    'delay-ms': { type: 'string', default: '1000' },
    rate: { type: 'string', default: '1500' },
    seconds: { type: 'string', default: '30' },
    'services-root': { type: 'string' },
  },
});
const root = resolve(opt['services-root'] ?? resolve(import.meta.dirname, '..'));
const delayMs = Number(opt['delay-ms']);
const rate = Number(opt.rate);
const total = rate * Number(opt.seconds);
const WARMUP_RECORDS = rate * 10;

// The bus of the checkout measured, loaded by path so --services-root swaps it.
const { createKafkaBus } = (await import(`${root}/shared/src/kafka/index.ts`)) as typeof import('../shared/src/kafka/index.ts');
const { createLogger } = (await import(`${root}/shared/src/log.ts`)) as typeof import('../shared/src/log.ts');
const bus = createKafkaBus({
  brokers: (opt.brokers as string).split(','),
  clientId: 'tier-lateness',
  topicPrefix: `tier-lateness-${Date.now()}.`,
  partitions: 12,
  replicationFactor: 1,
  log: createLogger('tier-lateness', 'silent'),
});
const tier = { name: 'tier', key: 'a key spread over the partitions', description: 'one delay tier' };
await bus.ensureTopics([tier]);
const producer = await bus.producer();

const late: number[] = [];
let released = 0;
await bus.consumeDelayed<{ i: number }>({
  groupId: 'tier-lateness',
  topics: [tier],
  delayMs: () => delayMs,
  handle: async (r) => {
    if (r.value.i >= WARMUP_RECORDS) late.push(Date.now() - (r.timestamp + delayMs));
    released++;
  },
});

const pad = 'x'.repeat(1000);
let sent = 0;
const t0 = Date.now();
while (sent < total) {
  const n = Math.min(Math.floor(((Date.now() - t0) / 1000) * rate), total) - sent;
  if (n > 0) {
    await producer.send(
      tier,
      Array.from({ length: n }, (_, k) => ({ key: `k${(sent + k) % 997}`, value: { i: sent + k, pad } })),
    );
    sent += n;
  }
  await sleep(20);
}
const deadline = Date.now() + delayMs + 60_000;
while (released < total && Date.now() < deadline) await sleep(200);
await bus.close();

const s = summarize(late);
console.log(
  `${root}: delay ${delayMs} ms, ${rate} records/s for ${opt.seconds} s: released ${released} of ${total}; ` +
    `ms after due p50 ${s.p50}, p90 ${s.p90}, p99 ${s.p99}, max ${s.max}`,
);
process.exit(released === total ? 0 : 1);
