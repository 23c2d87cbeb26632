// Kafka requests each service sends, by API (Produce, Fetch, OffsetCommit, ...): preload it into the
// services of a benchmark run with
//   mkdir -p /tmp/kreq && npm run bench -- --scenario single --env KAFKA_REQUESTS_DIR=/tmp/kreq --node-flag=--import=$PWD/bench/kafka-requests.mjs
// Each process appends its running totals every 5 s (and at exit) to
// $KAFKA_REQUESTS_DIR (default: the temp dir)/kafka-requests-<pid>.log, after a first line naming
// its main module. Then the highest rate of each API over any 30 s (±5 s) of each process:
//   node bench/kafka-requests.mjs /tmp/kreq/*.log
// It counts kafkajs's Connection.send calls, so it sees what kafkajs sends, retries included.
// Plain JavaScript, like mem-probe.mjs: it runs in the services without the project's loader.
import { appendFileSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const WINDOW_S = 30;

function preload() {
  // The services' kafkajs: resolved from their working directory (the checkout), the same module
  // instance they load, so patching its prototype counts their requests.
  const { prototype } = createRequire(join(process.cwd(), 'package.json'))('kafkajs/src/network/connection.js');
  const counts = {};
  const send = prototype.send;
  prototype.send = function countedSend(args) {
    const api = args.request.apiName;
    counts[api] = (counts[api] ?? 0) + 1;
    return send.call(this, args);
  };
  const file = join(process.env.KAFKA_REQUESTS_DIR || tmpdir(), `kafka-requests-${process.pid}.log`);
  appendFileSync(file, `# ${process.argv[1] ?? '(no script)'}\n`);
  const write = () => appendFileSync(file, `${Date.now()} ${JSON.stringify(counts)}\n`);
  setInterval(write, 5000).unref();
  process.on('exit', write);
}

/**
 * Per file: its main module and each API's highest rate over any window of WINDOW_S ± 5 s (over
 * the whole log when it spans less, as in a --quick run). Lines that are not totals are skipped.
 */
export function summarize(text) {
  const [head = '', ...lines] = text.trim().split('\n');
  const points = [];
  for (const l of lines) {
    const m = /^(\d+) (\{.*\})$/.exec(l);
    if (m) points.push({ t: Number(m[1]), counts: JSON.parse(m[2]) });
  }
  const rate = (a, b, api) => ((b.counts[api] ?? 0) - (a.counts[api] ?? 0)) / ((b.t - a.t) / 1000);
  const rates = {};
  const span = points.length > 1 ? (points.at(-1).t - points[0].t) / 1000 : 0;
  for (let i = 0; i < points.length; i++) {
    for (let j = i + 1; j < points.length; j++) {
      const s = (points[j].t - points[i].t) / 1000;
      if (span >= WINDOW_S - 5 ? Math.abs(s - WINDOW_S) > 5 : i > 0 || j < points.length - 1) continue;
      for (const api of Object.keys(points[j].counts)) rates[api] = Math.max(rates[api] ?? 0, rate(points[i], points[j], api));
    }
  }
  return { main: head.replace(/^# /, ''), rates };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const files = process.argv.slice(2);
  if (!files.length) {
    console.error('usage: node bench/kafka-requests.mjs DIR/kafka-requests-*.log');
    process.exit(2);
  }
  for (const f of files) {
    const { main, rates } = summarize(readFileSync(f, 'utf8'));
    const cells = Object.entries(rates)
      .filter(([, r]) => r >= 0.5)
      .sort((a, b) => b[1] - a[1])
      .map(([api, r]) => `${api} ${Math.round(r)}/s`);
    console.log(`${basename(f)} ${main.split('/services/')[1] ?? main}: ${cells.join(', ') || 'none'}`);
  }
} else {
  preload();
}
