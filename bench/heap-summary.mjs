// What a V8 heap snapshot holds, by kind: the self size and count of its objects grouped by type and
// constructor (strings, compiled code and numbers each as one group), largest first, and how much
// of the string total is strings over 20 KB (module sources mostly). Take the snapshot as
// bench/README.md says ("Where memory goes"), then:
//   node bench/heap-summary.mjs /tmp/snaps/Heap.*.heapsnapshot [rows]
// Plain JavaScript, like mem-probe.mjs: it runs on any Node without the project's loader.
import { readFileSync } from 'node:fs';

const [file, rows = '30'] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/heap-summary.mjs FILE.heapsnapshot [rows]');
  process.exit(2);
}
const snap = JSON.parse(readFileSync(file, 'utf8'));
const fields = snap.snapshot.meta.node_fields;
const types = snap.snapshot.meta.node_types[0];
const [iType, iName, iSize] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
const STRINGS = new Set(['string', 'concatenated string', 'sliced string']);
const groups = new Map();
let total = 0;
let bigStrings = 0;
for (let i = 0; i < snap.nodes.length; i += fields.length) {
  const type = types[snap.nodes[i + iType]];
  const size = snap.nodes[i + iSize];
  let name = snap.strings[snap.nodes[i + iName]];
  if (STRINGS.has(type)) {
    if (type === 'string' && size > 20_000) bigStrings += size;
    name = '';
  } else if (type === 'code' || type === 'number') name = '';
  const key = `${type}${name ? `: ${name.slice(0, 60)}` : ''}`;
  const g = groups.get(key) ?? { size: 0, count: 0 };
  g.size += size;
  g.count++;
  groups.set(key, g);
  total += size;
}
const mb = (n) => (n / 1048576).toFixed(2).padStart(8);
console.log(`${mb(total)} MB in all; strings over 20 KB: ${mb(bigStrings).trim()} MB`);
console.log('      MB    count  kind');
for (const [key, g] of [...groups].sort((a, b) => b[1].size - a[1].size).slice(0, Number(rows))) {
  console.log(`${mb(g.size)} ${String(g.count).padStart(8)}  ${key}`);
}
