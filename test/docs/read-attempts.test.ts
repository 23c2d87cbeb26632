// The analyst's example consumer (docs/examples/read-attempts.ts) reads the attempts topic of a real
// broker with its own group (from the beginning of partitions it has no offset for: the records
// were written before it started), deduplicates on id, and counts by type, status and code.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { createKafkaBus } from '@switchyard/shared/kafka/index.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { AttemptRecord } from '@switchyard/shared/model/index.ts';
import { ROOT, uniqueName } from '@switchyard/shared/testing/index.ts';

t.test('read-attempts prints each attempt once and counts them', async (t) => {
  const brokers = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
  const prefix = `${uniqueName('analyst')}.`;
  const bus = createKafkaBus({
    brokers: [brokers],
    clientId: 'analyst-test',
    topicPrefix: prefix,
    partitions: 1,
    replicationFactor: 1,
    log: createLogger('t', 'silent'),
  });
  t.teardown(() => bus.close());
  await bus.ensureTopics([TOPIC.attempts]);
  const attempt = (id: string, status: 'success' | 'failed', code: string): AttemptRecord => ({
    id,
    tenant_id: 'acme',
    destination_id: 'd1',
    destination_type: 'webhook',
    event_id: `e-${id}`,
    topic: 'user.created',
    event_time: '2026-11-25T10:00:00.000Z',
    event_received_at: '2026-11-25T10:00:00.000Z',
    status,
    code,
    response_data: null,
    attempt_number: 1,
    manual: false,
    time: '2026-11-25T10:00:01.000Z',
    duration_ms: 12,
    final: true,
  });
  // The second record is a redelivery of the first (same id), as after a sender crash.
  const records = [attempt('a1', 'success', '200'), attempt('a1', 'success', '200'), attempt('a2', 'failed', '500')];
  await (await bus.producer()).send(
    TOPIC.attempts,
    records.map((value) => ({ key: value.destination_id, value })),
  );

  const child = spawn(process.execPath, [join(ROOT, 'docs/examples/read-attempts.ts'), '--raw', '--max', '3', '--group', uniqueName('g')], {
    env: { ...process.env, KAFKA_BROKERS: brokers, KAFKA_TOPIC_PREFIX: prefix },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (err += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  clearTimeout(timer);
  t.equal(code, 0, err);
  const printed = out
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as AttemptRecord).id);
  t.same(printed, ['a1', 'a2'], 'each attempt once');
  t.match(err, /2026-11-25T10:00 webhook success 200 1/);
  t.match(err, /2026-11-25T10:00 webhook failed 500 1/);
  t.notMatch(err, /TimeoutNegativeWarning/, "kafkajs's idle timer fixed: no warning");
});
