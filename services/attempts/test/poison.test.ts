// Poison records: a routed event or an attempt that Postgres can never store is
// dead-lettered with the reason, an unstorable response is stored escaped, and the records behind
// them on the same partition are stored as usual. Both modes: Kafka + Postgres, and the embedded
// log + PGlite.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { InRecord } from '@switchyard/shared/bus/index.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import type { AttemptRecord, RoutedRecord } from '@switchyard/shared/model/index.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { createTestDatabase, testConfig, waitFor } from '@switchyard/shared/testing/index.ts';
import { isTransient } from '../src/isolate.ts';
import { start } from '../src/service.ts';

t.test('failures are transient by SQLSTATE class', async (t) => {
  for (const code of ['08006', '40001', '40P01', '53300', '55P03', '57P01', '57014', 'XX000']) t.ok(isTransient({ code }), code);
  for (const code of ['22P05', '22P02', '22021', '23505', '42P01', '54000', '54001', '0A000', '55000'])
    t.notOk(isTransient({ code }), code);
  t.ok(isTransient(new Error('Connection terminated unexpectedly')), 'no SQLSTATE: ours, retried');
});

const now = new Date().toISOString();
const event = (tenant: string, id: string, data: Record<string, unknown> = {}) => ({
  id,
  tenant_id: tenant,
  topic: 'user.created',
  time: now,
  received_at: now,
  eligible_for_retry: true,
  metadata: null,
  data: data as RoutedRecord['event']['data'],
  destination_id: null,
});
const routed = (e: ReturnType<typeof event>): RoutedRecord => ({ event: e, matched_destination_ids: [], skipped_destination_ids: [] });
const attempt = (id: string, eventId: string, responseData: AttemptRecord['response_data']): AttemptRecord => ({
  id,
  tenant_id: 'acme',
  destination_id: 'd1',
  destination_type: 'webhook',
  event_id: eventId,
  topic: 'user.created',
  event_time: now,
  event_received_at: now,
  status: 'success',
  code: '200',
  response_data: responseData,
  attempt_number: 1,
  manual: false,
  time: now,
  duration_ms: 3,
  final: true,
});

for (const mode of ['kafka', 'embedded'] as const) {
  t.test(`poison records are isolated (${mode})`, async (t) => {
    const dir = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? tmpdir(), 'poison-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const common = { KAFKA_PARTITIONS: '1', ATTEMPTS_BATCH_WAIT_MS: '20' };
    const config =
      mode === 'kafka'
        ? testConfig({ DATABASE_URL: await createTestDatabase(t), ...common })
        : testConfig({ KAFKA_BROKERS: '', DATABASE_URL: '', DATA_DIR: dir, ...common });
    const rt = await createRuntime('attempts-test', config, { embedded: mode === 'embedded' });
    t.teardown(() => rt.close());
    const service = await start(rt);
    t.teardown(() => service.close());
    const dead: InRecord<unknown>[] = [];
    const dlq = await rt.bus.consume<unknown>({
      groupId: 'poison-dlq',
      topics: [TOPIC.storeDeadLetter],
      fromBeginning: true,
      handle: async (r) => void dead.push(r),
    });
    t.teardown(() => dlq.close());
    const producer = await rt.bus.producer();

    // One batch each: records that can never be written sit between good ones.
    await producer.send(TOPIC.routed, [
      { key: 'acme', value: routed(event('acme', 'before')) },
      { key: 'acme', value: routed(event('ac\u0000me', 'never')) },
      { key: 'acme', value: Buffer.from('{not json') },
      { key: 'acme', value: routed(event('acme', 'after', { ok: true })) },
    ]);
    const ids = ['0193a000-0000-7000-8000-000000000001', '0193a000-0000-7000-8000-000000000002', '0193a000-0000-7000-8000-000000000003'];
    // An attempt of an event never stored (a router took a producer's year-0 timestamp): the
    // look-up of its event fails as its write does, and must not hold up the batch.
    const yearZero = {
      ...attempt('0193a000-0000-7000-8000-000000000004', 'lost', null),
      event_time: '0000-01-01T00:00:00Z',
      event_received_at: '0000-01-01T00:00:00Z',
    };
    await producer.send(TOPIC.attempts, [
      { key: 'd1', value: attempt(ids[0] as string, 'before', { status: 200, body: 'ok\u0000!' }) },
      // Not a UUID: no repair makes this attempt storable.
      { key: 'd1', value: attempt('not-a-uuid', 'before', { status: 200, body: 'x' }) },
      { key: 'd1', value: yearZero },
      { key: 'd1', value: attempt(ids[1] as string, 'after', { status: 200, body: { k: '\ud800' } }) },
      { key: 'd1', value: attempt(ids[2] as string, 'after', { status: 200, body: 'fine' }) },
    ]);

    await waitFor('the good events stored', async () => (await rt.db('events').whereIn('id', ['before', 'after'])).length === 2);
    await waitFor('three attempts stored', async () => (await rt.db('attempts').whereIn('id', ids)).length === 3);
    await waitFor('four dead letters', () => dead.length === 4);
    const reasons = dead.map((d) => `${d.headers['x-dead-letter-source']} ${d.headers['x-dead-letter-reason']}`).sort();
    t.match(reasons[0], /attempts\/0\/1 22P02 invalid input syntax for type uuid/, 'the attempt with a bad id');
    t.match(reasons[2], /routed\/0\/1 22P05 unsupported Unicode escape sequence/, 'the event with NUL in its tenant id');
    t.match(reasons[1], /attempts\/0\/2 22008 /, 'the attempt of a year-0 event');
    t.match(reasons[3], /routed\/0\/2 invalid JSON/, 'the record that is not JSON');
    const rows = (await rt.db('attempts').whereIn('id', ids).select('id', 'response_data')) as Array<{
      id: string;
      response_data: unknown;
    }>;
    const stored = Object.fromEntries(rows.map((r) => [r.id, r.response_data]));
    t.same(stored[ids[0] as string], { status: 200, body: 'ok\\u0000!', escaped: true }, 'NUL stored as its escape, saying so');
    t.same(stored[ids[1] as string], { status: 200, body: { k: '\\ud800' }, escaped: true }, 'a lone surrogate too');
    t.same(stored[ids[2] as string], { status: 200, body: 'fine' }, 'a clean response as it was');
    t.equal((await rt.db('events').where({ id: 'never' })).length, 0);
  });
}
