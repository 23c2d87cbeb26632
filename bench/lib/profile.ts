// Summaries of V8 CPU profiles (node --cpu-prof): self time per function and per area (package,
// service file, Node internals, GC), so a profile reads as "where time goes" in a few lines.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface Frame {
  name: string;
  where: string;
  selfMs: number;
  /** Percent of non-idle samples. */
  pct: number;
}

export interface ProfileSummary {
  file: string;
  wallMs: number;
  busyMs: number;
  idlePct: number;
  gcPct: number;
  top: Frame[];
  areas: Array<{ area: string; selfMs: number; pct: number }>;
}

const r1 = (x: number) => Math.round(x * 10) / 10;

/** Where a frame's code lives, coarsely: a package, a project file, a Node internal, or a V8 pseudo-frame. */
export function areaOf(f: CallFrame): string {
  const url = f.url;
  if (!url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + 14).split('/');
    return (parts[0] ?? '').startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? '?');
  }
  if (url.startsWith('node:')) {
    const parts = url.slice(5).split('/');
    return `node:${parts[0] === 'internal' ? `internal/${parts[1] ?? ''}`.replace(/\.js$/, '') : parts[0]}`;
  }
  const m = /\/(services\/[^/]+\/src\/.*|shared\/src\/.*|bench\/.*)$/.exec(url);
  return m?.[1] ?? basename(url);
}

function whereOf(f: CallFrame): string {
  if (!f.url) return '';
  const nm = f.url.lastIndexOf('/node_modules/');
  const short = nm >= 0 ? f.url.slice(nm + 14) : (/\/((?:services|shared|bench)\/.*)$/.exec(f.url)?.[1] ?? f.url.replace(/^file:\/\//, ''));
  return `${short}:${f.lineNumber + 1}`;
}

/**
 * `window` keeps only the samples taken within [from, to] (epoch ms), given the epoch time the process
 * exited (a profile's own clock is monotonic, so it is placed by its end, which is the exit).
 */
export function summarizeProfile(file: string, topN = 15, window?: { from: number; to: number; exitedAt: number }): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  let startUs = p.startTime;
  let endUs = p.endTime;
  if (window) {
    startUs = Math.max(p.startTime, p.endTime - (window.exitedAt - window.from) * 1000);
    endUs = Math.min(p.endTime, p.endTime - (window.exitedAt - window.to) * 1000);
  }
  if (p.samples && p.timeDeltas) {
    // Each sample's time is the delta to the next sample.
    let ts = p.startTime;
    for (let i = 0; i < p.samples.length; i++) {
      ts += p.timeDeltas[i] ?? 0;
      if (ts < startUs || ts > endUs) continue;
      const id = p.samples[i] as number;
      const dt = p.timeDeltas[i + 1] ?? 0;
      selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, dt));
    }
  } else {
    const interval =
      (p.endTime - p.startTime) /
      Math.max(
        1,
        p.nodes.reduce((n, x) => n + (x.hitCount ?? 0), 0),
      );
    for (const n of p.nodes) selfUs.set(n.id, (n.hitCount ?? 0) * interval);
  }
  const wallMs = (endUs - startUs) / 1000;
  let idle = 0;
  let gc = 0;
  const frames = new Map<string, { name: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id);
    if (!n) continue;
    const f = n.callFrame;
    if (f.functionName === '(idle)') {
      idle += us;
      continue;
    }
    if (f.functionName === '(garbage collector)') gc += us;
    const key = `${f.functionName}\u0000${f.url}\u0000${f.lineNumber}`;
    const fr = frames.get(key) ?? { name: f.functionName || '(anonymous)', where: whereOf(f), us: 0 };
    fr.us += us;
    frames.set(key, fr);
    const a = areaOf(f);
    areas.set(a, (areas.get(a) ?? 0) + us);
  }
  const busyUs = [...frames.values()].reduce((s, f) => s + f.us, 0);
  const pct = (us: number) => (busyUs > 0 ? r1((us / busyUs) * 100) : 0);
  return {
    file: basename(file),
    wallMs: Math.round(wallMs),
    busyMs: Math.round(busyUs / 1000),
    idlePct: wallMs > 0 ? r1((idle / 1000 / wallMs) * 100) : 0,
    gcPct: pct(gc),
    top: [...frames.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, topN)
      .map((f) => ({ name: f.name, where: f.where, selfMs: Math.round(f.us / 1000), pct: pct(f.us) })),
    areas: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([area, us]) => ({ area, selfMs: Math.round(us / 1000), pct: pct(us) })),
  };
}

/** Markdown for one profile summary. */
export function profileMarkdown(s: ProfileSummary, topN = 10): string {
  const lines = [
    `**${s.file}**: ${(s.busyMs / 1000).toFixed(1)} s busy of ${(s.wallMs / 1000).toFixed(1)} s (idle ${s.idlePct}%), GC ${s.gcPct}% of busy.`,
    '',
    '| area | self % |  | top function | where | self % |',
    '|---|---:|---|---|---|---:|',
  ];
  for (let i = 0; i < topN; i++) {
    const a = s.areas[i];
    const f = s.top[i];
    if (!a && !f) break;
    lines.push(
      `| ${a ? `\`${a.area}\`` : ''} | ${a ? a.pct : ''} |  | ${f ? `\`${f.name}\`` : ''} | ${f ? `\`${f.where}\`` : ''} | ${f ? f.pct : ''} |`,
    );
  }
  return lines.join('\n');
}

// Standalone: node bench/lib/profile.ts <file.cpuprofile>...
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const f of process.argv.slice(2)) console.log(`${profileMarkdown(summarizeProfile(f, 20), 20)}\n`);
}
