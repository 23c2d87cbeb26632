// The other service's own published TypeScript SDK (@hookdeck/outpost-sdk, pinned; infra/outpost-sdk.sh
// installs it outside the workspace) against embedded mode with its default settings. The SDK checks
// every answer against its own models (closed enumerations, required fields, date-times) and throws
// on any difference, so each call here passing is the drop-in promise kept: every operation
// interface.md has, every destination type in its names and config form, a delivery and its attempt.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { ROOT, waitFor } from '@switchyard/shared/testing/index.ts';
import { deployment } from './generated.ts';

// startService reads the mode when called: one embedded process.
process.env.SWITCHYARD_E2E_MODE = 'embedded';

const KEY = { key: 'AKIAIOSFODNN7EXAMPLE', secret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

/** A create body of every type, as the SDK's own test factories write them (its names, camelCase fields). */
const BODIES: Array<Record<string, unknown>> = [
  { type: 'aws_sqs', config: { queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/my-queue' }, credentials: KEY },
  {
    type: 'rabbitmq',
    config: { serverUrl: 'host.com:5672', exchange: 'my-exchange' },
    credentials: { username: 'user', password: 'pass' },
  },
  { type: 'hookdeck', credentials: { token: Buffer.from('src_test123:test_signing_key').toString('base64') } },
  { type: 'aws_kinesis', config: { streamName: 'my-stream', region: 'us-east-1' }, credentials: KEY },
  {
    type: 'azure_servicebus',
    config: { name: 'my-queue' },
    credentials: {
      connectionString: 'Endpoint=sb://namespace.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=key',
    },
  },
  { type: 'aws_s3', config: { bucket: 'my-bucket', region: 'us-east-1' }, credentials: KEY },
  {
    type: 'gcp_pubsub',
    config: { projectId: 'my-project', topic: 'my-topic' },
    credentials: { serviceAccountJson: '{"type":"service_account","project_id":"my-project"}' },
  },
  {
    type: 'kafka',
    config: { brokers: 'kafka.example.com:9092', topic: 'events', saslMechanism: 'scram-sha-256', tls: 'true' },
    credentials: { username: 'user', password: 'pass' },
  },
];

t.test('the other service’s SDK: every operation, every type, a delivery and its attempt', async (t) => {
  const sdkDir = execFileSync('bash', [join(ROOT, 'infra/outpost-sdk.sh'), 'dir'], { encoding: 'utf8', timeout: 600_000 }).trim();
  const { Outpost } = await import(pathToFileURL(join(sdkDir, 'dist/esm/index.js')).href);
  const d = await deployment(t, 'outpost-sdk');
  const sdk = new Outpost({ serverURL: `${d.baseUrl}/api/v1`, apiKey: d.apiKey });
  const tenantId = 'sdk-co';

  /** One SDK call; a refusal of the answer (or an error answer) fails the test with what the SDK said. */
  const call = async (name: string, fn: () => Promise<any>): Promise<any> => {
    try {
      const r = await fn();
      t.pass(name);
      return r;
    } catch (err) {
      const e = err as Error & { rawValue?: unknown; body?: string };
      t.fail(`${name}: ${e.name}: ${e.message} ${e.body ?? JSON.stringify(e.rawValue ?? '')}`.slice(0, 2000));
      return undefined;
    }
  };

  t.equal((await call('health', () => sdk.health.check()))?.status, 'healthy');
  t.equal((await call('tenants.upsert', () => sdk.tenants.upsert(tenantId, { metadata: { plan: 'pro' } })))?.id, tenantId);
  t.same((await call('tenants.get', () => sdk.tenants.get(tenantId)))?.metadata, { plan: 'pro' });
  t.ok((await call('tenants.getToken', () => sdk.tenants.getToken(tenantId)))?.token, 'a tenant token');
  t.match((await call('tenants.getPortalUrl', () => sdk.tenants.getPortalUrl(tenantId)))?.redirectUrl, /token=/);
  t.same(await call('topics.list', () => sdk.topics.list()), ['user.created']);
  const schemas = await call('schemas.listDestinationTypes', () => sdk.schemas.listDestinationTypes());
  t.same(
    schemas?.map((s: { type: string }) => s.type),
    ['webhook', 'aws_sqs', 'rabbitmq', 'hookdeck', 'aws_kinesis', 'azure_servicebus', 'aws_s3', 'gcp_pubsub', 'kafka'],
    'every type, in its names',
  );
  for (const body of BODIES) {
    const type = body.type as string;
    t.equal((await call(`schemas.getDestinationType ${type}`, () => sdk.schemas.getDestinationType(type)))?.type, type);
    const created = await call(`destinations.create ${type}`, () => sdk.destinations.create(tenantId, { topics: ['*'], ...body }));
    t.equal(created?.type, type, `${type}: created, answered in its name`);
    if (!created) continue;
    t.equal((await call(`destinations.get ${type}`, () => sdk.destinations.get(tenantId, created.id)))?.type, type);
    const updated = await call(`destinations.update ${type}`, () =>
      sdk.destinations.update(tenantId, created.id, { type, topics: ['user.created'] }),
    );
    t.same(updated?.topics, ['user.created'], `${type}: updated`);
    t.ok(
      (await call(`destinations.disable ${type}`, () => sdk.destinations.disable(tenantId, created.id)))?.disabledAt,
      `${type}: disabled`,
    );
    t.equal((await call(`destinations.enable ${type}`, () => sdk.destinations.enable(tenantId, created.id)))?.disabledAt, null);
    // The SDK's own list filter enumerates every type but kafka: kafka's is listed unfiltered.
    const filter = type === 'kafka' ? undefined : type;
    const listed = await call(`destinations.list type=${filter}`, () => sdk.destinations.list(tenantId, filter));
    t.same(
      listed?.map((x: { id: string }) => x.id),
      [created.id],
      `${type}: listed by its type`,
    );
    t.same(await call(`destinations.delete ${type}`, () => sdk.destinations.delete(tenantId, created.id)), { success: true });
  }

  // A delivery: a webhook to the local receiver, an event, its attempt, a retry.
  const hook = await call('destinations.create webhook', () =>
    sdk.destinations.create(tenantId, { type: 'webhook', topics: '*', config: { url: `${d.receiver.url}/hook` } }),
  );
  const published = await call('publish', () => sdk.publish({ tenantId, topic: 'user.created', data: { n: 1 } }));
  t.same(published?.destinationIds, [hook?.id], 'routed to the webhook');
  const attempts = await waitFor(
    'its attempt, listed',
    async () => {
      const page = await sdk.attempts.list({ tenantId, include: ['event'] });
      return page.models.length ? page.models : null;
    },
    120_000,
  );
  const [attempt] = attempts;
  t.equal(attempt.status, 'success', 'delivered');
  t.equal(attempt.event?.id, published?.id, 'with its event');
  t.ok(d.receiver.requests.length > 0, 'the webhook received it');
  t.equal((await call('attempts.get', () => sdk.attempts.get(attempt.id)))?.id, attempt.id);
  t.equal((await call('attempts.get with tenantId', () => sdk.attempts.get(attempt.id, tenantId)))?.id, attempt.id);
  const byType = await call('attempts.list destinationType', () =>
    sdk.attempts.list({ tenantId, destinationType: ['webhook'], status: 'success' }),
  );
  t.same(
    byType?.models.map((a: { id: string }) => a.id),
    [attempt.id],
    'by destination type',
  );
  const otherType = await call('attempts.list destinationType aws_sqs', () => sdk.attempts.list({ tenantId, destinationType: 'aws_sqs' }));
  t.same(otherType?.models, [], 'none to another type');
  t.equal((await call('destinations.getAttempt', () => sdk.destinations.getAttempt(tenantId, hook.id, attempt.id)))?.id, attempt.id);
  const perDestination = await call('destinations.listAttempts', () => sdk.destinations.listAttempts({ tenantId, destinationId: hook.id }));
  t.same(
    perDestination?.models.map((a: { id: string }) => a.id),
    [attempt.id],
  );
  const events = await call('events.list', () => sdk.events.list({ tenantId, id: [published?.id], topic: 'user.created' }));
  t.same(
    events?.models.map((e: { id: string }) => e.id),
    [published?.id],
  );
  t.same((await call('events.get', () => sdk.events.get(published.id)))?.data, { n: 1 });
  t.same(await call('retry', () => sdk.retry({ eventId: published.id, destinationId: hook.id })), { success: true });
  await waitFor(
    'the retry’s attempt',
    async () => (await sdk.destinations.listAttempts({ tenantId, destinationId: hook.id })).models.length === 2,
    120_000,
  );
  // Metrics in its query form: the first attempt and the manual retry, both delivered.
  const time = { start: new Date(Date.now() - 3_600_000), end: new Date(Date.now() + 60_000) };
  const eventMetrics = await call('metrics.getEventMetrics', () =>
    sdk.metrics.getEventMetrics({ time, measures: ['count'], dimensions: ['topic'], filtersTenantId: tenantId }),
  );
  t.same(
    eventMetrics?.data.map((p: any) => [p.dimensions, p.metrics]),
    [[{ topic: 'user.created' }, { count: 1 }]],
    'one event',
  );
  const attemptMetrics = await call('metrics.getAttemptMetrics', () =>
    sdk.metrics.getAttemptMetrics({
      time,
      granularity: '1h',
      measures: ['count', 'successful_count', 'first_attempt_count', 'manual_retry_count'],
      dimensions: ['destination_type'],
      filtersTenantId: tenantId,
    }),
  );
  const points = attemptMetrics?.data.filter((p: any) => p.metrics.count > 0) ?? [];
  t.same(
    points.map((p: any) => p.dimensions),
    [{ destination_type: 'webhook' }],
    'by destination type',
  );
  t.same(
    points.reduce((sum: Record<string, number>, p: any) => {
      for (const [k, v] of Object.entries(p.metrics as Record<string, number>)) sum[k] = (sum[k] ?? 0) + v;
      return sum;
    }, {}),
    { count: 2, successful_count: 2, first_attempt_count: 1, manual_retry_count: 1 },
    'the attempt and its manual retry',
  );
  t.same(
    (await call('tenants.list', () => sdk.tenants.list({ id: [tenantId, 'nobody'] })))?.models.map((x: { id: string }) => x.id),
    [tenantId],
  );
  t.same(await call('tenants.delete', () => sdk.tenants.delete(tenantId)), { success: true });
});
