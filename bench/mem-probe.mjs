// Where a service's RSS goes, every 2 s: preload it into the services of a benchmark run with
//   npm run bench -- --scenario hanging --env "NODE_OPTIONS=--max-semi-space-size=4 --import=$PWD/bench/mem-probe.mjs"
// Each process appends to $MEM_PROBE_DIR (default: the temp dir)/switchyard-mem-<pid>.log: RSS, the
// V8 heap (heapTotal, used) and array buffers from process.memoryUsage(), and resident MB per kind
// of mapping from /proc/self/smaps: `v8pages` (V8 heap pages are 256 KiB mappings, so this counts
// V8's pooled pages that heapTotal leaves out), `nodebin` (the node binary's own pages), `[heap]`
// (the C heap) and `otheranon`. Plain JavaScript on purpose: a .ts preload would load the type
// stripper, whose WebAssembly memory would itself show up in the figures.
import { appendFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const file = join(process.env.MEM_PROBE_DIR || tmpdir(), `switchyard-mem-${process.pid}.log`);
const mb = (bytes) => Math.round(bytes / 1048576);
appendFileSync(file, `# ${process.argv[1] ?? '(no script)'}\n`);

setInterval(() => {
  const kinds = { v8pages: 0, nodebin: 0, '[heap]': 0, otheranon: 0, other: 0 };
  let kind = 'other';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const size = Number.parseInt(head[2], 16) - Number.parseInt(head[1], 16);
      const name = head[3];
      if (!name) kind = size === 256 * 1024 ? 'v8pages' : 'otheranon';
      else if (name === process.execPath) kind = 'nodebin';
      else kind = name === '[heap]' ? '[heap]' : 'other';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) kinds[kind] += Number(rss[1]) * 1024;
  }
  const m = process.memoryUsage();
  const parts = Object.entries(kinds).map(([k, v]) => `${k}=${mb(v)}`);
  appendFileSync(
    file,
    `${new Date().toISOString()} rss=${mb(m.rss)} heapTotal=${mb(m.heapTotal)} heapUsed=${mb(m.heapUsed)} arrayBuffers=${mb(m.arrayBuffers)} external=${mb(m.external)} ${parts.join(' ')}\n`,
  );
}, 2000).unref();
