// Threshold crossings to operator events (alerts.ts): an alert per crossing, an auto-disable when
// configured and the destination was enabled, the topic first, then a signed callback that never
// holds up the pipeline. The callback receiver is a real local HTTP server.
import t from 'tap';
import type { HealthChange } from '../src/health-store.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { AttemptRecord, OperatorEvent } from '@switchyard/shared/model/index.ts';
import { freePort, startReceiver, waitFor } from '@switchyard/shared/testing/index.ts';
import { createAlerts, signCallback } from '../src/alerts.ts';

const log = createLogger('test', 'silent');
const change = (destination_id: string, crossed: boolean, consecutive_failures = 5): HealthChange => {
  const last = { destination_id, status: 'failed', code: '500' } as AttemptRecord;
  return { tenant_id: 'acme', destination_id, consecutive_failures, runs: crossed ? [{ consecutive_failures, last }] : [], last };
};

function alerts(opts: { autoDisable: boolean; disabled?: Set<string>; callback?: { url: string; secret: string } }) {
  const emitted: OperatorEvent[][] = [];
  const disableCalls: string[] = [];
  const onHealth = createAlerts({
    threshold: 5,
    autoDisable: opts.autoDisable,
    async disable(_tenant, id) {
      disableCalls.push(id);
      if (opts.disabled?.has(id)) return false;
      opts.disabled?.add(id);
      return true;
    },
    emit: async (events) => void emitted.push(events),
    callback: opts.callback,
    log,
  });
  return { onHealth, emitted, disableCalls };
}

t.test('only a crossing raises an alert; without auto-disable nothing is disabled', async (t) => {
  const { onHealth, emitted, disableCalls } = alerts({ autoDisable: false });
  t.same(await onHealth([change('quiet', false, 3)]), [], 'below the threshold: nothing');
  t.equal(emitted.length, 0, 'nothing emitted');
  const events = await onHealth([change('d1', true), change('d2', false, 9)]);
  t.same(
    events.map((e) => [e.type, e.destination_id]),
    [['alert.consecutive_failure', 'd1']],
  );
  t.match(events[0], { tenant_id: 'acme', data: { consecutive_failures: 5, threshold: 5, last_attempt: { code: '500' } } });
  t.same(disableCalls, []);
  t.equal(emitted.length, 1, 'one emit for the batch');
});

t.test('with auto-disable: the alert and the disable, once; an already disabled destination only alerts', async (t) => {
  const disabled = new Set(['was-off']);
  const { onHealth } = alerts({ autoDisable: true, disabled });
  const events = await onHealth([change('d1', true), change('was-off', true)]);
  t.same(
    events.map((e) => [e.type, e.destination_id]),
    [
      ['alert.consecutive_failure', 'd1'],
      ['destination.auto_disabled', 'd1'],
      ['alert.consecutive_failure', 'was-off'],
    ],
  );
  t.ok(disabled.has('d1'), 'd1 disabled');
  t.equal(new Set(events.map((e) => e.id)).size, 3, 'each event its own id');
});

t.test('each run that reached the threshold is alerted as it was, not as the batch ended', async (t) => {
  const { onHealth, disableCalls } = alerts({ autoDisable: true, disabled: new Set() });
  const failed = (id: string) => ({ id, destination_id: 'd1', status: 'failed', code: '503' }) as AttemptRecord;
  const success = { id: 'att_ok', destination_id: 'd1', status: 'success', code: '200' } as AttemptRecord;
  // Two runs in one batch, the batch ending with a success.
  const events = await onHealth([
    {
      tenant_id: 'acme',
      destination_id: 'd1',
      consecutive_failures: 0,
      runs: [
        { consecutive_failures: 6, last: failed('att_6') },
        { consecutive_failures: 5, last: failed('att_12') },
      ],
      last: success,
    },
  ]);
  t.same(
    events.map((e) => [e.type, e.data.consecutive_failures, e.data.last_attempt?.id]),
    [
      ['alert.consecutive_failure', 6, 'att_6'],
      ['destination.auto_disabled', 6, 'att_6'],
      ['alert.consecutive_failure', 5, 'att_12'],
    ],
    'an alert per run, with its count and its failed attempt; one auto-disable',
  );
  t.same(disableCalls, ['d1'], 'disabled once');
});

t.test('a failed emit fails the call (the batch is handled again); the topic is the durable channel', async (t) => {
  const onHealth = createAlerts({
    threshold: 5,
    autoDisable: false,
    disable: async () => true,
    emit: async () => {
      throw new Error('broker away');
    },
    log,
  });
  await t.rejects(onHealth([change('d1', true)]), /broker away/);
});

t.test('the callback is signed Standard Webhooks style; a dead callback holds nothing up', async (t) => {
  const rx = await startReceiver(t);
  const { onHealth } = alerts({ autoDisable: true, disabled: new Set(), callback: { url: `${rx.url}/ops`, secret: 'operator-secret' } });
  const events = await onHealth([change('d1', true)]);
  await waitFor('both callbacks', () => rx.requests.length >= 2);
  for (const r of rx.requests) {
    const id = String(r.headers['webhook-id']);
    const ts = Number(r.headers['webhook-timestamp']);
    t.equal(r.headers['webhook-signature'], signCallback('operator-secret', id, ts, r.body), `${id}: signature over id.timestamp.body`);
    t.ok(
      events.some((e) => e.id === id && JSON.stringify(e) === r.body),
      'the body is the operator event',
    );
  }
  // Nothing listens on this port: the call still returns its events at once.
  const dead = alerts({ autoDisable: false, callback: { url: `http://127.0.0.1:${await freePort()}/ops`, secret: 's' } });
  const started = Date.now();
  t.equal((await dead.onHealth([change('d2', true)])).length, 1);
  t.ok(Date.now() - started < 1000, 'not held up by the callback');
});
