/**
 * The embedded database's thread: PGlite runs here, off the event loop that serves the pipeline,
 * and answers the Postgres wire protocol (db/embedded.ts connects node-postgres to it).
 *
 * Contract with db/embedded.ts: `workerData` is `{ dir, startParams }`. Each connection arrives as
 * a `{ session: MessagePort }` message; on that port every message is a Uint8Array of whole frontend
 * messages, answered by one Uint8Array of backend messages, in order. A new session starts clean:
 * an open transaction is rolled back and prepared statements are dropped, as a new server connection
 * would have none (the node-postgres connection that opens it has prepared none). `{ close: true }`
 * closes the database; the thread then ends.
 *
 * PGlite is one backend: sessions take turns through one queue, each message run to its end.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { joined } from './bytes.ts';

const { dir, startParams } = workerData as { dir: string; startParams: string[] };
const pglite = await PGlite.create(dir, { startParams });

let queue: Promise<unknown> = Promise.resolve();
const inTurn = (fn: () => unknown) => {
  queue = queue.then(fn).catch((err: unknown) => {
    // A failure here is PGlite's own (a query's error is an ErrorResponse in the answer): the
    // database cannot go on, so the thread ends and db/embedded.ts fails every connection.
    console.error('embedded database failed:', err);
    process.exit(1);
  });
};

/**
 * Runs one message of a session and returns what PGlite wrote back. Through the raw stream call:
 * PGlite's other calls parse the answer too (node-postgres does that on the other side), and its
 * plain raw call keeps every parsed message of every call (PGlite 0.5: tens of MB within minutes).
 */
async function answer(data: Uint8Array): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array<ArrayBuffer>[] = [];
  await pglite.execProtocolRawStream(data, {
    // A view of PGlite's memory, valid only during the call.
    onRawData: (bytes) => parts.push(bytes.slice()),
  });
  return parts.length === 1 ? (parts[0] as Uint8Array<ArrayBuffer>) : joined(parts);
}

function serve(port: MessagePort): void {
  inTurn(async () => {
    if (pglite.isInTransaction()) await pglite.exec('ROLLBACK');
    await pglite.exec('DEALLOCATE ALL');
  });
  port.on('message', (data: Uint8Array) =>
    inTurn(async () => {
      const out = await answer(data);
      port.postMessage(out, [out.buffer]);
    }),
  );
}

parentPort?.on('message', (msg: { session?: MessagePort; close?: true }) => {
  if (msg.session) serve(msg.session);
  if (msg.close)
    inTurn(async () => {
      await pglite.close();
      process.exit(0);
    });
});
parentPort?.postMessage({ ready: true });
