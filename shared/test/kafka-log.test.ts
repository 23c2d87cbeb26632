// kafkajs's log lines as the Kafka bus logs them (shared/src/kafka/client.ts, kafkaLogCreator): a
// repeated message once per window with its count, a retried step or a request's error as a warning.
import kafkajs from 'kafkajs';
import t from 'tap';
import { KAFKA_LOG_REPEAT_MS, kafkaLogCreator } from '../src/kafka/client.ts';
import type { Logger } from '../src/log.ts';

const { logLevel } = kafkajs;

function capture() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; message: string }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => lines.push({ level, fields, message });
  const log = { error: at('error'), warn: at('warn'), debug: at('debug') } as unknown as Logger;
  return { lines, log };
}

t.test('a repeated message is logged once per window, then with how often it repeated', async (t) => {
  const { lines, log } = capture();
  let now = 0;
  const write = kafkaLogCreator(log, () => now)();
  const coordinator = { message: 'Response GroupCoordinator(key: 10, version: 2)', error: 'The group coordinator is not available' };
  for (let i = 0; i < 12; i++) {
    write({ level: logLevel.ERROR, label: 'ERROR', log: { ...coordinator, timestamp: 'x', correlationId: i } });
    now += 100;
  }
  t.equal(lines.length, 1, 'twelve in a window: one line');
  t.equal(lines[0]?.level, 'warn', 'what one request met: the request is retried, or its caller says it failed');
  t.notOk('timestamp' in ((lines[0]?.fields.kafka ?? {}) as object), "kafkajs's timestamp dropped (the line has its own)");
  write({ level: logLevel.ERROR, label: 'ERROR', log: { ...coordinator, error: 'The coordinator is loading' } });
  write({ level: logLevel.ERROR, label: 'ERROR', log: { ...coordinator, broker: 'b2:9092' } });
  t.equal(lines.length, 3, 'another error or another broker is another message');
  now = KAFKA_LOG_REPEAT_MS + 1;
  write({ level: logLevel.ERROR, label: 'ERROR', log: { ...coordinator } });
  t.equal(lines.length, 4, 'after the window: logged again');
  t.equal(lines[3]?.fields.repeated, 11, 'with the repeats held back');
  now += 1;
  write({ level: logLevel.ERROR, label: 'ERROR', log: { ...coordinator } });
  t.equal(lines.length, 4, 'and held back again');
});

t.test('a step kafkajs retries and what one request met are warnings; a failure of a step stays an error', async (t) => {
  const { lines, log } = capture();
  const write = kafkaLogCreator(log)();
  write({ level: logLevel.ERROR, label: 'ERROR', log: { message: 'Failed to connect to seed broker', retryCount: 0, retryTime: 100 } });
  write({ level: logLevel.ERROR, label: 'ERROR', log: { message: 'Crash: KafkaJSNumberOfRetriesExceeded' } });
  write({ level: logLevel.ERROR, label: 'ERROR', log: { message: 'Connection error: connect ECONNREFUSED 127.0.0.1:9092' } });
  write({
    level: logLevel.ERROR,
    label: 'ERROR',
    log: { message: 'Response Metadata(key: 3, version: 6)', error: 'This server does not host this topic-partition' },
  });
  write({ level: logLevel.WARN, label: 'WARN', log: { message: 'a warning' } });
  write({ level: logLevel.INFO, label: 'INFO', log: { message: 'joined' } });
  t.same(
    lines.map((l) => `${l.level}: ${l.message}`),
    [
      'warn: Failed to connect to seed broker',
      'error: Crash: KafkaJSNumberOfRetriesExceeded',
      'warn: Connection error: connect ECONNREFUSED 127.0.0.1:9092',
      'warn: Response Metadata(key: 3, version: 6)',
      'warn: a warning',
      'debug: joined',
    ],
  );
});

t.test('each client remembers its own messages', async (t) => {
  const { lines, log } = capture();
  const creator = kafkaLogCreator(log);
  const [a, b] = [creator(), creator()];
  a({ level: logLevel.ERROR, label: 'ERROR', log: { message: 'Connection error' } });
  b({ level: logLevel.ERROR, label: 'ERROR', log: { message: 'Connection error' } });
  t.equal(lines.length, 2);
});

t.test("kafkajs's warning about the bus's deliberate producer retries is at debug", async (t) => {
  const { lines, log } = capture();
  const write = kafkaLogCreator(log)();
  write({
    level: logLevel.WARN,
    label: 'WARN',
    log: { message: 'Limiting retries for the idempotent producer may invalidate EoS guarantees', timestamp: 'x' },
  });
  write({ level: logLevel.WARN, label: 'WARN', log: { message: 'Some other warning', timestamp: 'x' } });
  t.same(
    lines.map((l) => [l.level, l.message]),
    [
      ['debug', 'Limiting retries for the idempotent producer may invalidate EoS guarantees'],
      ['warn', 'Some other warning'],
    ],
  );
});
