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

// RFC 3339's date-time, as ajv-formats reads it: seconds required, any fraction, an offset required
// (`Z`, `+hh`, `+hhmm` or `+hh:mm`), `T`, `t` or a space between date and time.
const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(\.\d+)?(?:[Zz]|([+-])(\d\d)(?::?(\d\d))?)$/;

/** Instants a Date and Postgres both hold: years 0001 to 9999 (Postgres has no year 0), in ms. */
export const isStorableMs = (ms: number): boolean => ms >= -62_135_596_800_000 && ms <= 253_402_300_799_999;

/**
 * The instant an RFC 3339 date-time names, or undefined when it names none that a Date and Postgres
 * both hold: a leap second (:60: a Date has none), a day or hour that does not exist, an offset past
 * ±23:59, or a year outside 0001-9999 once in UTC (Postgres has no year 0). RFC 3339 allows all of
 * these, and each was a 500 (or an event no store could keep) past a plain format check.
 */
export function instantOf(raw: string): Date | undefined {
  const m = RFC3339.exec(raw);
  if (!m) return undefined;
  const n = (i: number) => Number(m[i] ?? 0);
  if (!isRealDateTime(n(1), n(2), n(3), n(4), n(5), n(6)) || n(9) > 23 || n(10) > 59) return undefined;
  const fraction = (m[7] ?? '').slice(0, 4); // milliseconds: a Date holds no finer
  const zone = m[8] ? `${m[8]}${m[9]}:${m[10] ?? '00'}` : 'Z';
  const at = new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${fraction}${zone}`);
  return isStorableMs(at.getTime()) ? at : undefined;
}

/**
 * The instant of a date-time a `date-time` format (DATE_TIME_FORMAT) already took, in a schema
 * validated before this is read; a value it did not take is our bug, thrown as such.
 */
export function checkedInstant(raw: string): Date {
  const at = instantOf(raw);
  if (!at) throw new Error(`checkedInstant: ${JSON.stringify(raw)} was not checked by DATE_TIME_FORMAT`);
  return at;
}

/** The `date-time` format of every schema that takes one (ajv.addFormat): an instant as instantOf reads it. */
export const DATE_TIME_FORMAT = { type: 'string', validate: (s: string) => instantOf(s) !== undefined } as const;
