// The ordered control's look for spills without a drain (every ORPHANS_MS) while its database is
// away, as an operator reads the log: one warning when looking starts to fail, the repeats of the
// run at debug, one line when it works again. A real database, first without the tables (every
// look fails), then migrated.
import { Writable } from 'node:stream';
import t from 'tap';
import { createDb, migrateLatest } from '@switchyard/shared/db/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import { createTestDatabase, waitFor } from '@switchyard/shared/testing/index.ts';
import { createOrderedDelivery, ORPHANS_MS } from '../src/controls/ordered.ts';
import { createOrderedStore } from '../src/controls/ordered-store.ts';

t.test('a failing look for orphaned spills: one warning, repeats at debug, one line when it works again', async (t) => {
  const db = createDb({ url: await createTestDatabase(t), poolMax: 2 });
  t.teardown(() => db.destroy());
  const lines: Array<{ level: string; msg: string; failures?: number }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  const unused = () => Promise.reject(new Error('not used here'));
  const ordered = createOrderedDelivery({
    handle: unused,
    turn: async () => undefined,
    written: () => undefined,
    emit: unused,
    canceled: unused,
    store: createOrderedStore(db),
    types: ['webhook'],
    log: createLogger('sender', 'debug', stream),
    progress: { read: unused, after: () => 0, tried: () => undefined },
  });
  t.teardown(() => ordered.close());
  const about = (msg: string) => lines.filter((l) => l.msg.startsWith(msg));
  const failed = () => about('looking for ordered spills without a drain failed');
  // The first look runs at once, the next ORPHANS_MS later: two failures in a row.
  await waitFor('two failed looks', () => failed().length >= 2, ORPHANS_MS * 6);
  t.same(
    failed()
      .slice(0, 2)
      .map((l) => [l.level, l.failures]),
    [
      ['warn', 1],
      ['debug', 2],
    ],
    'the first at warn, the next at debug, counted',
  );
  await migrateLatest(db);
  await waitFor('the look working again', () => about('looking for ordered spills without a drain works again').length > 0, ORPHANS_MS * 6);
  const [back] = about('looking for ordered spills without a drain works again');
  t.equal(back?.level, 'info', 'at info');
  t.ok((back?.failures ?? 0) >= 2, `with the failures of the run (${back?.failures})`);
});
