// kafkajs hands each partition of a fetch to eachBatch on its own (up to 16 at once), so a
// batch handler that writes to Postgres or produces to Kafka ran once per partition: with 12
// partitions a fetch became a dozen small transactions and produce requests where one would do.

interface Member<R> {
  records: R[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * A batch handler that merges the batches handed to it in one turn of the event loop, up to
 * `maxRecords` records a call, into one call of `handle`, each batch's records in their order. Each
 * caller's promise settles with the call that handled its batch.
 *
 * When a merged call fails, each of its batches is handled again on its own: a batch that cannot be
 * handled fails alone, as it did unmerged, and the others go on. A handler given to this must
 * therefore be safe to run again on records it may have partly handled, which at-least-once
 * consumption asks of it anyway. `onMergedFailure` hears of the merged call's error before the
 * reruns, since a rerun that succeeds would otherwise leave no trace of it.
 */
export function coalesceBatches<R>(
  handle: (records: R[]) => Promise<void>,
  maxRecords: number,
  onMergedFailure: (err: unknown, batches: number, records: number) => void = () => {},
): (records: R[]) => Promise<void> {
  let open: Member<R>[] | null = null;
  let openSize = 0;

  const run = (members: Member<R>[]) => {
    const only = members.length === 1 ? members[0] : undefined;
    if (only) {
      handle(only.records).then(only.resolve, only.reject);
      return;
    }
    const all = members.flatMap((m) => m.records);
    handle(all).then(
      () => {
        for (const m of members) m.resolve();
      },
      (err: unknown) => {
        onMergedFailure(err, members.length, all.length);
        for (const m of members) handle(m.records).then(m.resolve, m.reject);
      },
    );
  };
  const take = () => {
    const members = open;
    open = null;
    openSize = 0;
    if (members) run(members);
  };

  return (records) =>
    new Promise<void>((resolve, reject) => {
      if (open && openSize + records.length > maxRecords) take();
      if (!open) {
        const group: Member<R>[] = [];
        open = group;
        setImmediate(() => {
          if (open === group) take();
        });
      }
      open.push({ records, resolve, reject });
      openSize += records.length;
    });
}
