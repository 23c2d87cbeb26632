// The sender's destination-state cache (services/sender/src/destination-state.ts) in process: what a
// delivery pays to learn its destination's current state, on a hit (the steady state: entries are
// dropped only by a change record or after DESTINATION_STATE_TTL_MS) and on a miss (one database
// read, here a stand-in of --load-ms), against the snapshot path it replaced (the delivery's own copy,
// no lookup). There is no switch to turn the cache off in the pipeline, so this is its cost measure.
//   bash infra/run.sh node bench/destination-state.ts [--lookups 2000000] [--destinations 1000]
import { parseArgs } from 'node:util';
import { DESTINATION_STATE_TTL_MS, DestinationState } from '../services/sender/src/destination-state.ts';
import type { RoutableDestination } from '../shared/src/db/stores/destinations.ts';
import type { DestinationSnapshot } from '../shared/src/model/index.ts';

const { values: opt } = parseArgs({
  options: {
    lookups: { type: 'string', default: '2000000' },
    destinations: { type: 'string', default: '1000' },
    'load-ms': { type: 'string', default: '1' },
  },
});
const lookups = Number(opt.lookups);
const n = Number(opt.destinations);
const loadMs = Number(opt['load-ms']);
const snapshots = Array.from(
  { length: n },
  (_, i) => ({ tenant_id: `t${i % 100}`, id: `des_${i}`, type: 'webhook', config: { url: 'http://x' } }) as unknown as DestinationSnapshot,
);
let loads = 0;
const state = new DestinationState({
  ttlMs: DESTINATION_STATE_TTL_MS,
  load: async (tenantId, id) => {
    loads++;
    await new Promise((r) => setTimeout(r, loadMs));
    const snapshot = snapshots.find((s) => s.tenant_id === tenantId && s.id === id);
    return snapshot ? ({ snapshot, disabled_at: null } as unknown as RoutableDestination) : null;
  },
});

// Misses: every destination read once.
let t0 = process.hrtime.bigint();
await Promise.all(snapshots.map((s) => state.current(s)));
const missMs = Number(process.hrtime.bigint() - t0) / 1e6;

const run = (f: (s: DestinationSnapshot) => unknown) => {
  let sink = 0;
  const t = process.hrtime.bigint();
  for (let i = 0; i < lookups; i++) if (f(snapshots[i % n] as DestinationSnapshot)) sink++;
  return { ns: Number(process.hrtime.bigint() - t) / lookups, sink };
};
for (let w = 0; w < 3; w++) {
  run((s) => state.current(s));
  run((s) => s.id);
}
const hit = run((s) => state.current(s));
const snap = run((s) => s.id);
t0 = process.hrtime.bigint();
state.changed({ tenant_id: 't1', destination_id: 'des_1' });
await state.current(snapshots[1] as DestinationSnapshot);
const reloadMs = Number(process.hrtime.bigint() - t0) / 1e6;
console.log(
  JSON.stringify({
    destinations: n,
    lookups,
    loads,
    // Lookups through the cache: the first reads, four timed loops (three warm-ups), one after the change.
    hitRatio: Number((1 - loads / (n + 4 * lookups + 1)).toFixed(6)),
    hitNsPerLookup: Number(hit.ns.toFixed(1)),
    snapshotNsPerLookup: Number(snap.ns.toFixed(1)),
    firstReadOfAllMs: Number(missMs.toFixed(1)),
    reloadAfterChangeMs: Number(reloadMs.toFixed(2)),
    loadMs,
  }),
);
