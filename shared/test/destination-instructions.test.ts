// Every type's instructions (Markdown shown beside the portal's form) keep their numbered steps one
// list: a block between two steps (a code fence, a paragraph) must be indented into the step before
// it (three spaces, CommonMark), or the list ends there and the next step starts a new one.
import t from 'tap';
import { REGISTRY } from '../src/destinations/registry.ts';

for (const def of Object.values(REGISTRY)) {
  t.test(`${def.type}: the numbered steps are one list`, async (t) => {
    const lines = def.instructions.split('\n');
    const steps = lines.flatMap((l, i) => (/^\d+\. /.test(l) ? [i] : []));
    if (!steps.length) {
      t.pass('no numbered steps');
      return;
    }
    t.same(
      steps.map((i) => Number.parseInt(lines[i] as string, 10)),
      steps.map((_, n) => n + 1),
      'numbered 1, 2, 3, ...',
    );
    const first = steps[0] as number;
    const last = steps.at(-1) as number;
    for (let i = first; i <= last; i++) {
      const l = lines[i] as string;
      if (l === '' || /^\d+\. /.test(l)) continue;
      t.match(l, /^ {3}/, `line ${i + 1} is indented into its step: ${JSON.stringify(l.slice(0, 40))}`);
    }
  });
}
