// Kafka requests each service sends, by API (Produce, Fetch, OffsetCommit, ...), and their bytes:
// preload it into the services of a benchmark run with
//   mkdir -p /tmp/kreq && npm run bench -- --scenario single --env KAFKA_REQUESTS_DIR=/tmp/kreq --node-flag=--import=$PWD/bench/kafka-requests.mjs
// Each process appends its running totals every 5 s (and at exit) to
// $KAFKA_REQUESTS_DIR (default: the temp dir)/kafka-requests-<pid>.log, after a first line naming
// its main module: a line of request counts, then a `bytes` line: bytes sent (`Produce>`) and
// received (`Fetch<`) per API, the record bytes (keys and values) fetched per topic (`Fetch
// <topic>`), and the largest single one of each so far (`largest`). Then the
// highest rate of each over any 30 s (±5 s) of each process:
//   node bench/kafka-requests.mjs /tmp/kreq/*.log
// It wraps kafkajs's Connection.send, so it sees what kafkajs sends, retries included.
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
  const bytes = {};
  const largest = {};
  const add = (key, n) => {
    bytes[key] = (bytes[key] ?? 0) + n;
    if (n > (largest[key] ?? 0)) largest[key] = n;
  };
  const send = prototype.send;
  prototype.send = function countedSend(args) {
    const { request, response } = args;
    const api = request.apiName;
    counts[api] = (counts[api] ?? 0) + 1;
    // Views of kafkajs's request and response with encode and decode measured; everything else
    // (apiKey, expectResponse, parse, ...) comes from the originals through the prototype.
    const measuredRequest = Object.create(request);
    measuredRequest.encode = async () => {
      const encoder = await request.encode();
      add(`${api}>`, encoder.buffer.length);
      return encoder;
    };
    const measuredResponse = response && Object.create(response);
    if (measuredResponse) {
      measuredResponse.decode = async (payload) => {
        add(`${api}<`, payload.length);
        const decoded = await response.decode(payload);
        if (api === 'Fetch') {
          for (const t of decoded.responses ?? []) {
            let n = 0;
            for (const p of t.partitions) for (const m of p.messages ?? []) n += (m.key?.length ?? 0) + (m.value?.length ?? 0);
            add(`Fetch ${t.topicName}`, n);
          }
        }
        return decoded;
      };
    }
    return send.call(this, { ...args, request: measuredRequest, response: measuredResponse });
  };
  const file = join(process.env.KAFKA_REQUESTS_DIR || tmpdir(), `kafka-requests-${process.pid}.log`);
  appendFileSync(file, `# ${process.argv[1] ?? '(no script)'}\n`);
  const write = () => {
    const now = Date.now();
    appendFileSync(file, `${now} ${JSON.stringify(counts)}\n${now} bytes ${JSON.stringify({ ...bytes, largest })}\n`);
  };
  setInterval(write, 5000).unref();
  process.on('exit', write);
}

/** Each key's highest rate over any window of WINDOW_S ± 5 s (over the whole span when it is shorter). */
function highestRates(points) {
  const rate = (a, b, key) => ((b.counts[key] ?? 0) - (a.counts[key] ?? 0)) / ((b.t - a.t) / 1000);
  const rates = {};
  const span = points.length > 1 ? (points.at(-1).t - points[0].t) / 1000 : 0;
  for (let i = 0; i < points.length; i++) {
    for (let j = i + 1; j < points.length; j++) {
      const s = (points[j].t - points[i].t) / 1000;
      if (span >= WINDOW_S - 5 ? Math.abs(s - WINDOW_S) > 5 : i > 0 || j < points.length - 1) continue;
      for (const key of Object.keys(points[j].counts)) rates[key] = Math.max(rates[key] ?? 0, rate(points[i], points[j], key));
    }
  }
  return rates;
}

/**
 * Per file: its main module; each API's highest request rate and each byte counter's highest rate
 * (bytes/s) over any window of WINDOW_S ± 5 s (over the whole log when it spans less, as in a
 * --quick run); the largest single request, response or topic's fetched records so far. Lines that
 * are neither are skipped.
 */
export function summarize(text) {
  const [head = '', ...lines] = text.trim().split('\n');
  const requests = [];
  const bytes = [];
  let largest = {};
  for (const l of lines) {
    const m = /^(\d+) (bytes )?(\{.*\})$/.exec(l);
    if (!m) continue;
    let counts;
    try {
      counts = JSON.parse(m[3]);
    } catch {
      continue;
    }
    if (m[2]) {
      ({ largest = {}, ...counts } = counts);
      bytes.push({ t: Number(m[1]), counts });
    } else requests.push({ t: Number(m[1]), counts });
  }
  return { main: head.replace(/^# /, ''), rates: highestRates(requests), byteRates: highestRates(bytes), largest };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const files = process.argv.slice(2);
  if (!files.length) {
    console.error('usage: node bench/kafka-requests.mjs DIR/kafka-requests-*.log');
    process.exit(2);
  }
  const kb = (n) => `${Math.round(n / 1024).toLocaleString('en-US')} KiB`;
  for (const f of files) {
    const { main, rates, byteRates, largest } = summarize(readFileSync(f, 'utf8'));
    const cells = Object.entries(rates)
      .filter(([, r]) => r >= 0.5)
      .sort((a, b) => b[1] - a[1])
      .map(([api, r]) => `${api} ${Math.round(r)}/s`);
    console.log(`${basename(f)} ${main.split('/services/')[1] ?? main}: ${cells.join(', ') || 'none'}`);
    const flows = Object.entries(byteRates)
      .filter(([, r]) => r >= 1024)
      .sort((a, b) => b[1] - a[1])
      .map(([key, r]) => `${key} ${kb(r)}/s (largest ${kb(largest[key] ?? 0)})`);
    if (flows.length) console.log(`  bytes: ${flows.join(', ')}`);
  }
} else {
  preload();
}
