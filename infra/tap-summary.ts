// Reads tap's TAP stream on stdin, echoes it, and ends with the line CI reads: "N passed, N failed".
// Counts leaf test points (assertions and subtests without children), not files.
import { createInterface } from 'node:readline';

let passed = 0;
let failed = 0;
let skipped = 0;
const lines: string[] = [];
for await (const line of createInterface({ input: process.stdin })) {
  process.stdout.write(`${line}\n`);
  lines.push(line);
}
// A test point is a leaf unless the line before it is the deeper "1..N" plan of its own subtest.
let prev = '';
for (const line of lines) {
  const m = /^(\s*)(not ok|ok) \d+/.exec(line);
  const before = prev;
  if (line.trim() !== '') prev = line;
  if (!m) continue;
  const indent = m[1]?.length ?? 0;
  const closesSubtest = /^\s*1\.\.\d+/.test(before) && (/^(\s*)/.exec(before)?.[1]?.length ?? 0) > indent;
  if (closesSubtest) continue;
  if (/# SKIP|# TODO/i.test(line)) skipped++;
  else if (m[2] === 'ok') passed++;
  else failed++;
}
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
