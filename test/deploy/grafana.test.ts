// The Grafana dashboard (infra/grafana/switchyard.json) queries only metrics the services export
// (shared/src/metrics.ts and prom-client's process metrics), and every Switchyard metric is on it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { registry } from '@switchyard/shared/metrics.ts';
import { ROOT } from '@switchyard/shared/testing/index.ts';

interface Panel {
  title: string;
  type: string;
  targets?: Array<{ expr: string }>;
}

t.test('every metric the dashboard queries exists, and every Switchyard metric is shown', async (t) => {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'infra/grafana/switchyard.json'), 'utf8')) as { panels: Panel[]; uid: string };
  t.equal(dashboard.uid, 'switchyard');
  const exported = new Map((await registry.getMetricsAsJSON()).map((m) => [m.name, String(m.type)]));
  const queried = new Set<string>();
  const panels = dashboard.panels.filter((p) => p.type !== 'row');
  t.ok(panels.length >= 20, `${panels.length} panels`);
  for (const p of panels) {
    t.ok(p.targets?.length, `${p.title} has queries`);
    for (const { expr } of p.targets ?? []) {
      const names = [...expr.matchAll(/\b((?:switchyard|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => m[1] as string);
      t.ok(names.length, `${p.title}: ${expr} names a metric`);
      for (const raw of names) {
        // Histogram series carry _bucket, _sum and _count; and the suffix must fit the type.
        const base = raw.replace(/_(bucket|sum|count)$/, '');
        const name = exported.has(raw) ? raw : base;
        t.ok(exported.has(name), `${p.title}: ${raw} is exported`);
        if (raw !== name) t.equal(exported.get(name), 'histogram', `${raw}: ${name} is a histogram`);
        if (/\brate\(/.test(expr) && exported.get(name) === 'gauge') t.fail(`${p.title}: rate() of the gauge ${name}`);
        queried.add(name);
      }
    }
  }
  for (const name of exported.keys()) if (name.startsWith('switchyard_')) t.ok(queried.has(name), `${name} is on the dashboard`);
});
