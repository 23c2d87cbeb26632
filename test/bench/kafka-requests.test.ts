// bench/kafka-requests.mjs: preloaded into a process that talks to the test broker, it counts the
// requests kafkajs sends by API; its summary turns the totals into rates.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ROOT, uniqueName } from '@switchyard/shared/testing/index.ts';

const TOOL = join(ROOT, 'bench/kafka-requests.mjs');

t.test('counts the Produce requests of a process, by API, from its kafkajs', async (t) => {
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'kreq-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const topic = uniqueName('kreq');
  // Three produce requests one after another (each awaited), after the admin call that makes the topic.
  const script = `
    const { Kafka, logLevel } = require('kafkajs');
    (async () => {
      const kafka = new Kafka({ brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'], logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic: ${JSON.stringify(topic)}, numPartitions: 1 }], waitForLeaders: true });
      const producer = kafka.producer();
      await producer.connect();
      for (let i = 0; i < 3; i++) await producer.send({ topic: ${JSON.stringify(topic)}, messages: [{ value: String(i) }] });
      await producer.disconnect();
      await admin.deleteTopics({ topics: [${JSON.stringify(topic)}] });
      await admin.disconnect();
    })();
  `;
  execFileSync(process.execPath, ['--import', TOOL, '-e', script], {
    cwd: ROOT,
    env: { ...process.env, KAFKA_REQUESTS_DIR: dir },
  });
  const files = readdirSync(dir);
  t.equal(files.length, 1, 'one log for the one process');
  const lines = readFileSync(join(dir, files[0] as string), 'utf8')
    .trim()
    .split('\n');
  t.match(lines[0], /^# /, 'first line names the main module');
  const last = JSON.parse((lines.at(-1) as string).replace(/^\d+ /, '')) as Record<string, number>;
  t.equal(last.Produce, 3, 'each awaited send is one Produce request');
  t.ok((last.CreateTopics ?? 0) >= 1, 'admin requests are counted too');
  t.ok((last.Metadata ?? 0) >= 1);
});

t.test('the summary gives each API its highest rate over 30 s windows', async (t) => {
  const { summarize } = (await import(TOOL)) as {
    summarize(text: string): { main: string; rates: Record<string, number> };
  };
  const log = [
    '# /x/services/sender/src/main.js',
    '0 {"Produce":0}',
    '10000 {"Produce":100,"Fetch":5}',
    '30000 {"Produce":600,"Fetch":20}',
    '40000 {"Produce":1300,"Fetch":20}',
  ].join('\n');
  const { main, rates } = summarize(log);
  t.equal(main, '/x/services/sender/src/main.js');
  // 0 -> 30 s: 20/s; 10 -> 40 s: 40/s (the higher); 0 -> 40 s is outside 30 ± 5 s.
  t.equal(rates.Produce, 40);
  // Fetch: 0 -> 30 s, absent at the start so counted from 0: 20 in 30 s (10 -> 40 s: 15).
  t.equal(rates.Fetch, 20 / 30, 'an API absent at the window start counts from 0');

  const short = summarize(['# m', '0 {"Produce":0}', '5000 {"Produce":50}', '10000 {"Produce":200}', '10500 {"Prod'].join('\n'));
  t.same(short.rates, { Produce: 20 }, 'a log shorter than the window: over all of it; a torn last line skipped');
});
