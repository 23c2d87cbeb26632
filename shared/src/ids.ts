import { randomBytes } from 'node:crypto';

/**
 * UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Ids sort by creation
 * time, which keeps B-tree inserts local and lets an id double as a tiebreaker in keyset cursors.
 */
export function uuidv7(now: number = Date.now()): string {
  const b = randomBytes(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = ((b[6] as number) & 0x0f) | 0x70;
  b[8] = ((b[8] as number) & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const newId = uuidv7;
