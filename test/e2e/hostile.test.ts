// Hostile and unlucky input end to end: what can never be stored is refused at the gate
// or dead-lettered, a destination's unstorable answer is stored escaped, and none of it holds up the
// events and attempts behind it. Every service its own process on the real broker and Postgres; with
// SWITCHYARD_E2E_MODE=embedded (test/embedded/e2e-hostile.test.ts), one embedded process instead.
import t from 'tap';
import type { InRecord } from '@switchyard/shared/bus/index.ts';
import { createKafkaBus } from '@switchyard/shared/kafka/index.ts';
import { TOPIC } from '@switchyard/shared/bus/topics.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import { e2eMode, startReceiver, startStack, waitFor } from '@switchyard/shared/testing/index.ts';

interface Attempt {
  event_id: string;
  manual: boolean;
  status: string;
  response_data: Record<string, unknown> | null;
}

t.test('hostile input', async (t) => {
  const { env, base, api } = await startStack(t, { TOPICS: 'user.created', KAFKA_PARTITIONS: '1' });
  const raw = async (path: string, body: string) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.API_KEY}`, 'content-type': 'application/json' },
      body,
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  const rx = await startReceiver(t);
  // The destination answers bytes Postgres cannot store for events marked poison.
  rx.respond((r) => (r.body.includes('"poison"') ? { status: 200, body: 'ok\u0000!' } : { status: 200, body: 'fine' }));
  t.equal((await api('PUT', '/api/v1/tenants/hostile')).status, 201);
  const dest = await api<{ id: string }>('POST', '/api/v1/tenants/hostile/destinations', {
    type: 'webhook',
    topics: '*',
    config: { url: `${rx.url}/hook` },
  });
  t.equal(dest.status, 201);
  const destinationId = dest.body.id;
  const attemptsOf = async (eventId: string) =>
    (await api<{ models: Attempt[] }>('GET', `/api/v1/attempts?tenant_id=hostile&event_id=${eventId}&dir=asc`)).body.models;
  const delivered = (marker: string) => rx.requests.filter((r) => r.body.includes(marker)).length;

  t.test('a destination answering NUL: stored escaped, later events flow', async (t) => {
    const poison = await api<{ id: string }>('POST', '/api/v1/publish', {
      tenant_id: 'hostile',
      topic: 'user.created',
      data: { kind: 'poison' },
    });
    t.equal(poison.status, 202);
    const next = await api<{ id: string }>('POST', '/api/v1/publish', {
      tenant_id: 'hostile',
      topic: 'user.created',
      data: { kind: 'after-1' },
    });
    t.equal(next.status, 202);
    await waitFor('both delivered', () => delivered('"poison"') === 1 && delivered('after-1') === 1);
    const since = Date.now();
    // Listed and stored despite the poison answer before it on the same partition: an answer that
    // could not be stored would be retried where it is for ever, and nothing after it listed.
    await waitFor(
      'the later event listed',
      async () => (await api('GET', `/api/v1/tenants/hostile/events/${next.body.id}`)).status === 200,
    );
    const [after] = await waitFor('its attempt', async () => {
      const a = await attemptsOf(next.body.id);
      return a.length ? a : null;
    });
    t.comment(`listed ${Date.now() - since} ms after delivery`);
    t.equal(after?.status, 'success');
    const [stored] = await waitFor('the poison attempt', async () => {
      const a = await attemptsOf(poison.body.id);
      return a.length ? a : null;
    });
    t.same(stored?.response_data, { status: 200, body: 'ok\\u0000!', escaped: true }, 'the bytes, escaped, and saying so');
    // Retryable: a manual retry is delivered and recorded.
    t.equal((await api('POST', '/api/v1/retry', { event_id: next.body.id, destination_id: destinationId })).status, 202);
    await waitFor('the retry delivered', () => delivered('after-1') === 2);
    await waitFor('the manual attempt', async () => (await attemptsOf(next.body.id)).some((a) => a.manual));
  });

  t.test('publish with what can never be stored: 422 with the field path, nothing published', async (t) => {
    const cases: Array<[string, string]> = [
      ['{"tenant_id":"hostile","topic":"user.created","data":{"a":"x\\u0000y"}}', 'body.data.a'],
      ['{"tenant_id":"hostile","topic":"user.created","data":{"a":["\\ud800"]}}', 'body.data.a[0]'],
      ['{"tenant_id":"hostile","topic":"user.created","data":{"k\\u0000":1}}', 'body.data["k\\u0000"]'],
      ['{"tenant_id":"hostile","topic":"user.created","metadata":{"m":"\\udc00"},"data":{}}', 'body.metadata.m'],
      ['{"id":"e\\u0000","tenant_id":"hostile","topic":"user.created","data":{}}', 'body.id'],
    ];
    for (const [body, path] of cases) {
      const r = await raw('/api/v1/publish', body);
      t.equal(r.status, 422, body);
      t.equal(r.body.code, 'VALIDATION_FAILED');
      t.ok(JSON.stringify(r.body.data).includes(JSON.stringify(path).slice(1, -1)), `names ${path}`);
    }
    const deep = `{"tenant_id":"hostile","topic":"user.created","data":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`;
    const r = await raw('/api/v1/publish', deep);
    t.equal(r.status, 422, 'nesting past the limit is 422, not a retryable 503');
    t.match(JSON.stringify(r.body.data), /nests deeper than 64 levels/);
  });

  t.test('__proto__ and constructor are data: accepted, delivered and listed exactly', async (t) => {
    const body = '{"tenant_id":"hostile","topic":"user.created","data":{"__proto__":{"x":1},"constructor":{"prototype":1},"tag":"proto"}}';
    const r = await raw('/api/v1/publish', body);
    t.equal(r.status, 202);
    await waitFor('delivered', () => delivered('"proto"') === 1);
    const got = rx.requests.find((x) => x.body.includes('"proto"'));
    t.same(Object.entries(JSON.parse(got?.body ?? '{}')), [
      ['__proto__', { x: 1 }],
      ['constructor', { prototype: 1 }],
      ['tag', 'proto'],
    ]);
    const ev = await waitFor('listed', async () => {
      const e = await fetch(`${base}/api/v1/tenants/hostile/events/${r.body.id}`, { headers: { authorization: `Bearer ${env.API_KEY}` } });
      return e.status === 200 ? await e.text() : null;
    });
    t.match(ev, /"__proto__":\{"x":1\}/);
    t.match(ev, /"constructor":\{"prototype":1\}/);
  });

  // Only Kafka deployments take events written straight into the log.
  if (e2eMode() === 'services')
    t.test('events written straight into Kafka with what cannot be stored go to events.dead-letter', async (t) => {
      const bus = createKafkaBus({
        brokers: [env.KAFKA_BROKERS as string],
        clientId: 'e2e-hostile',
        topicPrefix: env.KAFKA_TOPIC_PREFIX as string,
        partitions: 1,
        replicationFactor: 1,
        log: createLogger('e2e', 'silent'),
      });
      t.teardown(() => bus.close());
      const producer = await bus.producer();
      const dead: InRecord<unknown>[] = [];
      await bus.consume<unknown>({ groupId: 'e2e-hostile-dlq', topics: [TOPIC.deadLetter], handle: async (r) => void dead.push(r) });
      await producer.send(TOPIC.events, [
        { key: 'hostile', value: Buffer.from('{"tenant_id":"hostile","topic":"user.created","data":{"a":"\\u0000"}}') },
        { key: 'hostile', value: Buffer.from('{"tenant_id":"hostile","topic":"user.created","metadata":{"m":"\\ud800"},"data":{}}') },
        { key: 'hostile', value: { id: 'direct-after', tenant_id: 'hostile', topic: 'user.created', data: { kind: 'after-direct' } } },
      ]);
      await waitFor('two dead letters', () => dead.length === 2);
      t.match(dead[0]?.headers['x-dead-letter-reason'], /unstorable: event\.data\.a contains U\+0000/);
      t.match(dead[1]?.headers['x-dead-letter-reason'], /unstorable: event\.metadata\.m contains a lone UTF-16 surrogate/);
      await waitFor('the valid one delivered', () => delivered('after-direct') === 1);
      await waitFor('and listed', async () => (await api('GET', '/api/v1/tenants/hostile/events/direct-after')).status === 200);
      t.test('one whose delivery record would be over the limit: a dead letter, not a wedged partition', async (t) => {
        // 1 MB as written; once parsed and written again each 1e20 is 21 digits: 4.4 MB, over 4 MiB.
        const growing = `{"id":"direct-grows","tenant_id":"hostile","topic":"user.created","data":{"n":[${Array(200_000).fill('1e20').join(',')}]}}`;
        await producer.send(TOPIC.events, [
          { key: 'hostile', value: Buffer.from(growing) },
          {
            key: 'hostile',
            value: { id: 'direct-after-large', tenant_id: 'hostile', topic: 'user.created', data: { kind: 'after-large' } },
          },
        ]);
        await waitFor('its dead letter', () => dead.length === 3);
        t.match(
          dead[2]?.headers['x-dead-letter-reason'],
          /^too large: its routed record would be about \d+ bytes, over KAFKA_MAX_MESSAGE_BYTES/,
        );
        t.equal((dead[2]?.value as { id?: string } | undefined)?.id, 'direct-grows');
        await waitFor('the event after it delivered', () => delivered('after-large') === 1);
      });
    });
});
