// bench/kafka-requests.mjs: preloaded into a process that talks to the test broker, it counts the
// requests kafkajs sends by API and their bytes; its summary turns the totals into rates.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ROOT, uniqueName } from '@switchyard/shared/testing/index.ts';

const TOOL = join(ROOT, 'bench/kafka-requests.mjs');

t.test('counts the requests of a process and their bytes, by API, from its kafkajs', async (t) => {
  const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'kreq-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const topic = uniqueName('kreq');
  // Three produce requests one after another (each awaited), after the admin call that makes the
  // topic; then a consumer reads the three records back (three 1000-byte values).
  const script = `
    const { Kafka, logLevel } = require('kafkajs');
    (async () => {
      const kafka = new Kafka({ brokers: [process.env.KAFKA_BROKERS ?? '127.0.0.1:9092'], logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic: ${JSON.stringify(topic)}, numPartitions: 1 }], waitForLeaders: true });
      const producer = kafka.producer();
      await producer.connect();
      for (let i = 0; i < 3; i++) await producer.send({ topic: ${JSON.stringify(topic)}, messages: [{ value: String(i).repeat(1000) }] });
      await producer.disconnect();
      const consumer = kafka.consumer({ groupId: ${JSON.stringify(topic)} });
      await consumer.connect();
      await consumer.subscribe({ topic: ${JSON.stringify(topic)}, fromBeginning: true });
      let seen = 0;
      await new Promise((resolve) => consumer.run({ eachMessage: async () => { if (++seen === 3) resolve(); } }));
      await consumer.disconnect();
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
  const last = JSON.parse((lines.at(-2) as string).replace(/^\d+ /, '')) as Record<string, number>;
  t.equal(last.Produce, 3, 'each awaited send is one Produce request');
  t.ok((last.CreateTopics ?? 0) >= 1, 'admin requests are counted too');
  t.ok((last.Metadata ?? 0) >= 1);
  t.ok((last.Fetch ?? 0) >= 1);
  const bytes = JSON.parse((lines.at(-1) as string).replace(/^\d+ bytes /, '')) as Record<string, number> & {
    largest: Record<string, number>;
  };
  t.equal(bytes[`Fetch ${topic}`], 3000, "the records' bytes fetched from the topic, each once");
  // Each produce request carries its 1000-byte value and the request's framing.
  t.ok((bytes['Produce>'] ?? 0) > 3000 && (bytes['Produce>'] ?? 0) < 3 * 1400, `Produce> ${bytes['Produce>']}`);
  t.ok((bytes.largest['Produce>'] ?? 0) > 1000 && (bytes.largest['Produce>'] ?? 0) < 1400);
  t.ok((bytes['Produce<'] ?? 0) > 0, 'responses are counted');
  t.ok((bytes['Fetch<'] ?? 0) >= 3000, 'the fetch responses carried the records');
});

t.test('the summary gives each API its highest rate over 30 s windows', async (t) => {
  const { summarize } = (await import(TOOL)) as {
    summarize(text: string): {
      main: string;
      rates: Record<string, number>;
      byteRates: Record<string, number>;
      largest: Record<string, number>;
    };
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

  const withBytes = summarize(
    [
      '# m',
      '0 {"Fetch":0}',
      '0 bytes {"Fetch<":0,"largest":{}}',
      '30000 {"Fetch":3}',
      '30000 bytes {"Fetch<":3000000,"Fetch t":2900000,"largest":{"Fetch<":2000000,"Fetch t":1950000}}',
    ].join('\n'),
  );
  t.same(withBytes.rates, { Fetch: 0.1 }, 'byte lines do not count as requests');
  t.same(withBytes.byteRates, { 'Fetch<': 100_000, 'Fetch t': 2_900_000 / 30 }, 'bytes per second, per counter');
  t.same(withBytes.largest, { 'Fetch<': 2_000_000, 'Fetch t': 1_950_000 }, 'the largest, from the last line');
});
