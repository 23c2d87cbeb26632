// Reads tap's TAP stream on stdin, echoes it (unless --quiet), and ends with the line CI reads:
// "N passed, N failed". Counts leaf test points (assertions and subtests without children), not
// files. Each failed point is named on a line of its own just before it ("failed: file > subtest >
// assertion"), so the tail of a long run, which is all a CI summary may keep, says what failed.
import { createInterface } from 'node:readline';

const quiet = process.argv.includes('--quiet');
let passed = 0;
let failed = 0;
let skipped = 0;
const failures: string[] = [];
const lines: string[] = [];
for await (const line of createInterface({ input: process.stdin })) {
  if (!quiet) process.stdout.write(`${line}\n`);
  lines.push(line);
}
// A test point is a leaf unless the line before it is the deeper "1..N" plan of its own subtest.
// "# Subtest: name" opens a level at its indent; the names of the open levels make a failure's path.
const open: { indent: number; name: string }[] = [];
const closeFrom = (indent: number) => {
  while (open.length > 0 && (open.at(-1)?.indent ?? 0) >= indent) open.pop();
};
let prev = '';
let inYaml = false;
for (const line of lines) {
  // A failure's YAML diagnostics (between "---" and "...") may quote anything, TAP lines included.
  if (inYaml) {
    if (/^\s*\.\.\.$/.test(line)) inYaml = false;
    continue;
  }
  if (/^\s*---$/.test(line)) {
    inYaml = true;
    continue;
  }
  const subtest = /^(\s*)# Subtest: (.*)$/.exec(line);
  if (subtest) {
    const indent = subtest[1]?.length ?? 0;
    closeFrom(indent);
    open.push({ indent, name: subtest[2] ?? '' });
  }
  const m = /^(\s*)(not ok|ok) \d+(?: - (.*))?/.exec(line);
  const before = prev;
  // Comments ("# time=...") may stand between a subtest's plan and its closing point.
  if (line.trim() !== '' && !/^\s*#/.test(line)) prev = line;
  if (!m) continue;
  const indent = m[1]?.length ?? 0;
  // The levels this point sits in are those opened at a smaller indent; a subtest's own closing
  // point is at its header's indent, so it and everything deeper close here.
  const path = open.filter((level) => level.indent < indent).map((level) => level.name);
  closeFrom(indent);
  const closesSubtest = /^\s*1\.\.\d+/.test(before) && (/^(\s*)/.exec(before)?.[1]?.length ?? 0) > indent;
  if (closesSubtest) continue;
  if (/# SKIP|# TODO/i.test(line)) skipped++;
  else if (m[2] === 'ok') passed++;
  else {
    failed++;
    const name = (m[3] ?? '').replace(/ # time=.*$/, '');
    failures.push([...path, name].join(' > '));
  }
}
for (const failure of failures) console.log(`failed: ${failure}`);
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
