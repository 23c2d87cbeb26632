/**
 * Whether the fields name a real day and time, AD (month 1-12): each read back from a Date built of
 * them, as Date.parse rolls 2026-02-30 over into March (and takes 24:00) where Postgres refuses it
 * (a 500, not a 422). Used by the paging cursors, the listings' time filters and the webhook type's
 * secret expiry.
 */
export function isRealDateTime(y: number, month: number, d: number, h = 0, mi = 0, s = 0): boolean {
  const at = new Date(0);
  at.setUTCFullYear(y, month - 1, d);
  at.setUTCHours(h, mi, s);
  return (
    y >= 1 &&
    at.getUTCFullYear() === y &&
    at.getUTCMonth() === month - 1 &&
    at.getUTCDate() === d &&
    at.getUTCHours() === h &&
    at.getUTCMinutes() === mi &&
    at.getUTCSeconds() === s
  );
}
