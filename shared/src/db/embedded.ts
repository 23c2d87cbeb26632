/**
 * The embedded database: PGlite (Postgres compiled to WebAssembly) on a thread of its own
 * (db/embedded-worker.ts), behind the same knex client, node-postgres driver, type parsers,
 * migrations and queries as production Postgres.
 *
 * node-postgres takes its socket from the `stream` option; here that socket is a message port to the
 * thread, which hands the bytes to PGlite's wire protocol and sends back its answer. So knex's own
 * 'pg' dialect and node-postgres's own connection run unchanged, startup included: query text,
 * parameter encoding and result parsing are exactly as against a server. PGlite's work (about 40%
 * of embedded mode's CPU at full speed) runs beside the pipeline's JavaScript instead of between it.
 *
 * PGlite is one backend, one session: the pool holds one connection and queries queue for it; a
 * connection opened again (after an idle timeout or an error) starts clean. Durability: a commit is
 * written to the files (pwrite) before its answer is sent, so it survives the process being killed;
 * PGlite's file layer never calls fsync, so it does not survive a power cut or kernel crash the way a
 * Postgres server with fsync=on would.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, extname } from 'node:path';
import { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { joined } from './bytes.ts';
import { createDb, type Knex } from './index.ts';

/**
 * PGlite's own start parameters (its defaults as of 0.5: `startParams` replaces them), plus a 16 MB
 * buffer cache instead of the 160 MB PGlite sets: in a process beside the four services the cache is
 * WebAssembly memory, resident once touched and never given back. Embedded mode's idle RSS 493 ->
 * 342 MB and under load 615 -> 452 MB, throughput no lower (docs/performance.md, "PGlite's buffer
 * cache"). What the cache misses is read through the OS page cache: a copy, not a disk read.
 */
const START_PARAMS = [
  '--single',
  '-F',
  '-O',
  '-j',
  ...[
    'search_path=public',
    'exit_on_error=false',
    'log_checkpoints=false',
    'max_worker_processes=0',
    'max_parallel_workers=0',
    'max_parallel_workers_per_gather=0',
    'io_method=sync',
    'max_parallel_maintenance_workers=0',
    'shared_buffers=16MB',
  ].flatMap((p) => ['-c', p]),
];

export interface EmbeddedDb {
  db: Knex;
  close(): Promise<void>;
}

/**
 * Creates the database of an empty or missing `dir` in a child process. PGlite's initdb peaks at
 * about 0.5 GB and leaves ~40 MB of C heap behind in the process that ran it; run in a child, neither
 * stays with the long-lived process (docs/performance.md, "PGlite's initdb in a child process"). The
 * child writes to a sibling directory that is renamed into place, so a start killed midway leaves no
 * half-made database behind.
 */
async function createDatabase(dir: string): Promise<void> {
  const staging = `${dir}.initdb`;
  rmSync(staging, { recursive: true, force: true });
  const script = `const { PGlite } = await import(${JSON.stringify(import.meta.resolve('@electric-sql/pglite'))});
    await (await PGlite.create(process.argv[1], { startParams: JSON.parse(process.argv[2]) })).close();`;
  try {
    await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, staging, JSON.stringify(START_PARAMS)], {
      env: { ...process.env, NODE_OPTIONS: '' },
    });
  } catch (err) {
    // execFile's message is the whole command line and script: say what failed and why, in a line.
    const e = err as { signal?: string | null; stderr?: string; message: string };
    const why = e.signal ? `stopped by ${e.signal}` : (e.stderr?.trim().split('\n').at(-1) ?? e.message.split('\n')[0]);
    throw new Error(`creating the database in ${dir} failed: ${why}`);
  }
  if (existsSync(dir)) rmdirSync(dir); // empty: rename(2) will not replace it
  renameSync(staging, dir);
}

/**
 * A node-postgres socket whose other end is the database thread: what node-postgres writes in one
 * turn of the event loop (a query's Parse, Bind, Describe, Execute and Sync) goes over as one
 * message, and the answer comes back as the bytes a server would send. The port holds the process
 * open only while an answer is awaited, so a tool that forgets to close the database still exits.
 */
class WorkerSocket extends Duplex {
  private readonly port: MessagePort;
  private awaited = 0;

  constructor(worker: Worker) {
    super();
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    port1.on('message', (answer: Uint8Array) => {
      if (--this.awaited === 0) port1.unref();
      if (answer.byteLength) this.push(Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength));
    });
    port1.unref();
    worker.postMessage({ session: port2 }, [port2]);
  }

  // What node-postgres calls on a TCP socket.
  connect(): this {
    process.nextTick(() => this.emit('connect'));
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }

  override _read(): void {}

  override _writev(chunks: Array<{ chunk: Buffer }>, done: (err?: Error | null) => void): void {
    // A copy, handed over: node-postgres reuses some of its buffers (the Sync message's).
    const out = joined(chunks.map((c) => c.chunk));
    if (++this.awaited === 1) this.port.ref();
    this.port.postMessage(out, [out.buffer]);
    done();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this._writev([{ chunk }], done);
  }

  override _final(done: (err?: Error | null) => void): void {
    this.push(null);
    done();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.port.close();
    done(err);
  }
}

/**
 * A thread inherits the process's Node options, but one loaded from a file refuses those about a
 * script given on the command line (`node --input-type=module -e ...`, as tests and tools run), and
 * options passed explicitly may not hold V8's: such a process gives its thread none.
 */
const scriptOnCommandLine = (argv: readonly string[]) => argv.some((a) => /^(-e|-p|-pe|--eval|--print|--input-type)(=|$)/.test(a));

/**
 * Opens (creating on first use) the database in `dir`, served by a thread of its own
 * (db/embedded-worker.ts). Migrations are the caller's, as with Postgres.
 */
export async function openEmbeddedDb(dir: string): Promise<EmbeddedDb> {
  if (!existsSync(dir) || readdirSync(dir).length === 0) {
    mkdirSync(dirname(dir), { recursive: true });
    await createDatabase(dir);
  }
  // The thread's module beside this one: .ts from the sources, .js in the built tree.
  const worker = new Worker(new URL(`./embedded-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url), {
    workerData: { dir, startParams: START_PARAMS },
    ...(scriptOnCommandLine(process.execArgv) ? { execArgv: [] } : {}),
  });
  let closing = false;
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the embedded database's thread exited (${code}) while opening ${dir}`)));
  });
  worker.removeAllListeners();
  worker.on('exit', (code) => {
    // Without its database embedded mode can do nothing right: end the process, as a lost
    // connection to a server would end a service that cannot reconnect. What was accepted is in
    // the log and the database's files; a restart goes on from there.
    if (!closing) throw new Error(`the embedded database's thread exited (${code})`);
  });
  worker.unref();
  const db = createDb({
    url: '',
    poolMax: 1,
    // node-postgres takes the socket from `stream`; a function, so each client gets its own.
    connection: () => ({ user: 'postgres', database: 'postgres', stream: () => new WorkerSocket(worker) }) as Knex.PgConnectionConfig,
  });
  return {
    db,
    async close() {
      await db.destroy();
      closing = true;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.ref();
      worker.postMessage({ close: true });
      await exited;
    },
  };
}
