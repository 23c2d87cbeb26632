import t from 'tap';
import { checkedInstant, instantOf, isStorableMs } from '../src/time.ts';

t.test('instantOf: the instant an RFC 3339 date-time names, in UTC', async (t) => {
  const iso = (s: string) => instantOf(s)?.toISOString();
  t.equal(iso('2030-01-01T00:00:00Z'), '2030-01-01T00:00:00.000Z');
  t.equal(iso('2030-01-01t00:00:00z'), '2030-01-01T00:00:00.000Z', 'lower case T and Z');
  t.equal(iso('2030-01-01 00:00:00Z'), '2030-01-01T00:00:00.000Z', 'a space for the T');
  t.equal(iso('2030-01-01T00:00:00+05'), '2029-12-31T19:00:00.000Z', 'an offset of hours only (a Date alone reads none)');
  t.equal(iso('2030-01-01T00:00:00+0530'), '2029-12-31T18:30:00.000Z');
  t.equal(iso('2030-01-01T00:00:00-05:30'), '2030-01-01T05:30:00.000Z');
  t.equal(iso('2030-01-01T00:00:00+20:00'), '2029-12-31T04:00:00.000Z', 'past the ±15:59 Postgres takes: in UTC');
  t.equal(iso('2030-01-01T00:00:00.123456789Z'), '2030-01-01T00:00:00.123Z', 'a long fraction, to the millisecond');
  t.equal(iso('2028-02-29T12:00:00Z'), '2028-02-29T12:00:00.000Z', 'a leap day');
  t.equal(iso('0001-01-01T00:00:00Z'), '0001-01-01T00:00:00.000Z', 'the first year');
  t.equal(iso('9999-12-31T23:59:59.999Z'), '9999-12-31T23:59:59.999Z', 'the last instant');
});

t.test('instantOf: none for what a Date or Postgres cannot hold, or what is not RFC 3339', async (t) => {
  for (const s of [
    '2016-12-31T23:59:60Z', // a leap second: a Date has none
    '0000-01-01T00:00:00Z', // Postgres has no year 0
    '0001-01-01T00:00:00+00:01', // year 0 once in UTC
    '9999-12-31T23:59:59-00:01', // year 10000 once in UTC
    '2030-02-30T00:00:00Z',
    '2030-01-01T24:00:00Z',
    '2030-01-01T00:60:00Z',
    '2030-01-01T00:00:00+24:00',
    '2030-01-01T00:00:00+05:60',
    '2030-01-01T00:00:00', // no offset
    '2030-01-01T00:00Z', // no seconds
    '2030-01-01',
    '+012030-01-01T00:00:00Z',
    'Tue, 01 Jan 2030 00:00:00 GMT',
    '',
  ]) {
    t.equal(instantOf(s), undefined, JSON.stringify(s));
  }
});

t.test('isStorableMs: years 0001 to 9999; checkedInstant: what the format took, or our bug', async (t) => {
  t.ok(isStorableMs(Date.parse('0001-01-01T00:00:00Z')));
  t.ok(isStorableMs(Date.parse('9999-12-31T23:59:59.999Z')));
  t.notOk(isStorableMs(Date.parse('0001-01-01T00:00:00Z') - 1), 'year 0');
  t.notOk(isStorableMs(Date.parse('9999-12-31T23:59:59.999Z') + 1), 'year 10000');
  t.notOk(isStorableMs(Number.NaN));
  t.equal(checkedInstant('2030-01-01T00:00:00+05').toISOString(), '2029-12-31T19:00:00.000Z');
  t.throws(() => checkedInstant('2016-12-31T23:59:60Z'), /was not checked by DATE_TIME_FORMAT/);
});
