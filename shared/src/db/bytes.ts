/**
 * `parts` copied into one new buffer of its own: never a slice of Node's shared pool (as
 * `Buffer.concat` may give), so it can be handed to another thread (transferred, not copied again).
 * Used by both ends of the embedded database's port (db/embedded.ts, db/embedded-worker.ts).
 */
export function joined(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
