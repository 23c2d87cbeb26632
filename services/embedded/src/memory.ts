// Giving back what start-up used and no longer needs, once embedded mode is ready.
//
// Start-up (module loading, migrations, compiling the database's WebAssembly on V8's background
// threads) leaves two kinds of memory behind that nothing will ask for while the process idles:
// - V8's young generation, grown to its limit: one memory-reducing collection gives it back.
// - glibc's arenas: the compilers' scratch memory is freed in pieces between live blocks, so the
//   arenas cannot shrink from the top and keep those pages resident (40-60 MB, varying run to
//   run). `malloc_trim(0)` hands every free page inside them back to the kernel. glibc has no
//   setting that does this by itself, and Node does not expose the call, so it is made through
//   koffi (a foreign-function library with prebuilt binaries: nothing to compile at install).
//
// Both are best effort and happen once: `gc` exists only when node runs with --expose-gc (as
// infra/start.sh starts it), and malloc_trim only on glibc; elsewhere the call does nothing. Later
// load grows both again as it needs (docs/performance.md, "Embedded mode memory").

/** What the process gave back: bytes of RSS, and whether glibc's arenas were trimmed. */
export interface Released {
  rssBytes: number;
  trimmed: boolean;
}

export async function releaseStartupMemory(): Promise<Released> {
  const before = process.memoryUsage.rss();
  globalThis.gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const trimmed = await mallocTrim();
  return { rssBytes: Math.max(0, before - process.memoryUsage.rss()), trimmed };
}

async function mallocTrim(): Promise<boolean> {
  if (process.platform !== 'linux') return false;
  try {
    const { default: koffi } = await import('koffi');
    // musl has no malloc_trim and no libc.so.6: load() throws, and there is nothing to trim.
    const trim = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)');
    trim(0);
    return true;
  } catch {
    return false;
  }
}
