// The info summaries of per-record work (log-summary.ts) through the real logger: one line an
// interval with what was counted in it, nothing while nothing was, and a last line at stop.
import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../src/log.ts';
import { createLogSummary } from '../src/log-summary.ts';
import { waitFor } from '../src/testing/index.ts';

function capture(level = 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger('test', level, stream), lines };
}

const EVERY_MS = 50;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a line an interval with its counts; nothing while idle; the rest at stop', async (t) => {
  const { logger, lines } = capture();
  const summary = createLogSummary(logger, 'router summary', ['events_routed', 'deliveries', 'dead_lettered'], EVERY_MS);
  t.teardown(() => summary.stop());
  summary.add({ events_routed: 3, deliveries: 5 });
  summary.add({ events_routed: 2, deliveries: 0 });
  summary.count('dead_lettered');
  await waitFor('the first summary', () => lines.length >= 1);
  t.match(lines[0], { level: 'info', msg: 'router summary', events_routed: 5, deliveries: 5, dead_lettered: 1, interval_s: Number });

  // Idle: intervals pass (ten of them) without a line.
  await sleep(EVERY_MS * 10);
  t.equal(lines.length, 1, 'nothing written while nothing was counted');

  // Counts start again from zero after each line.
  summary.count('deliveries', 4);
  await waitFor('the second summary', () => lines.length >= 2);
  t.match(lines[1], { events_routed: 0, deliveries: 4, dead_lettered: 0 });

  // At stop (shutdown) what was counted since the last line is written at once, and the timer ends.
  summary.count('events_routed');
  summary.stop();
  t.equal(lines.length, 3, 'written at stop');
  t.match(lines[2], { msg: 'router summary', events_routed: 1, deliveries: 0 });
  summary.count('events_routed');
  await sleep(EVERY_MS * 5);
  t.equal(lines.length, 3, 'no line after stop');
});

t.test('at warn, no summary is written', async (t) => {
  const { logger, lines } = capture('warn');
  const summary = createLogSummary(logger, 'sender summary', ['attempts'], EVERY_MS);
  summary.count('attempts', 7);
  summary.stop();
  t.same(lines, []);
});
