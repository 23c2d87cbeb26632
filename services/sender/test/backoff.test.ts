import t from 'tap';
import { retryDelayMs, tierFor } from '../src/backoff.ts';

const policy = { schedule: [] as number[], intervalSeconds: 30, maxRetries: 3, maxRetryAfterMs: 3_600_000 };
const mid = () => 0.5; // no jitter

t.test('interval doubles up to the limit', async (t) => {
  t.equal(retryDelayMs(1, policy, undefined, mid), 30_000);
  t.equal(retryDelayMs(2, policy, undefined, mid), 60_000);
  t.equal(retryDelayMs(3, policy, undefined, mid), 120_000);
  t.equal(retryDelayMs(4, policy, undefined, mid), null, 'exhausted after RETRY_MAX_LIMIT retries');
});

t.test('an explicit schedule sets the delays, at most one retry per entry', async (t) => {
  const p = { ...policy, schedule: [1, 5] };
  t.equal(retryDelayMs(1, p, undefined, mid), 1000);
  t.equal(retryDelayMs(2, p, undefined, mid), 5000);
  t.equal(retryDelayMs(3, p, undefined, mid), null, 'the schedule is shorter than RETRY_MAX_LIMIT: it ends the retries');
});

t.test('RETRY_MAX_LIMIT caps a schedule', async (t) => {
  const p = { ...policy, schedule: [1, 2], maxRetries: 1 };
  t.equal(retryDelayMs(1, p, undefined, mid), 1000, 'the first delay of the schedule');
  t.equal(retryDelayMs(2, p, undefined, mid), null, 'one retry, not two');
  t.equal(retryDelayMs(1, { ...p, maxRetries: 0 }, undefined, mid), null, '0: no retry at all');
});

t.test('jitter stays within ±10%', async (t) => {
  t.equal(
    retryDelayMs(1, policy, undefined, () => 0),
    27_000,
  );
  t.equal(
    retryDelayMs(1, policy, undefined, () => 1),
    33_000,
  );
});

t.test('Retry-After is honoured within bounds and never shortens the wait', async (t) => {
  t.equal(retryDelayMs(1, policy, 90_000, mid), 90_000, 'longer wait honoured');
  t.equal(retryDelayMs(1, policy, 1_000, mid), 30_000, 'shorter wait ignored');
  t.equal(retryDelayMs(1, policy, 10 * 3_600_000, mid), 3_600_000, 'capped');
});

t.test('tiers: the longest tier not longer than the remaining delay', async (t) => {
  t.equal(tierFor(0), 0);
  t.equal(tierFor(4_999), 0);
  t.equal(tierFor(5_000), 1);
  t.equal(tierFor(299_000), 2);
  t.equal(tierFor(10 * 3_600_000), 5);
});
