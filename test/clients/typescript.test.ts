// A TypeScript client generated from the served document by a second generator, openapi-generator's
// typescript-fetch (the pinned jar from Maven Central), compiled by tsc (strict) with a typed
// consumer and taken through a round trip against embedded mode: tenant, webhook destination,
// publish, the events, the attempts with their event, a retry, the deletion. Any generator or
// compiler failure fails here.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import t from 'tap';
import { checkRoundTrip, deployment, generate, run } from './generated.ts';

// startService reads the mode when called: one embedded process.
process.env.SWITCHYARD_E2E_MODE = 'embedded';

const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

/** The consumer: node out/roundtrip.js setup|read|finish [ids...], one JSON line out. */
const CONSUMER = `// Node's globals, declared here: the scratch project installs nothing but the generated client.
declare const process: { env: Record<string, string | undefined>; argv: string[] };
import { AttemptsApi, Configuration, DestinationsApi, EventsApi, MetricsApi, PublishApi, ResponseError, TenantsApi } from './client/index';

const config = new Configuration({ basePath: process.env.BASE_URL!, accessToken: process.env.API_KEY! });
const tenants = new TenantsApi(config);
const destinations = new DestinationsApi(config);
const publish = new PublishApi(config);
const events = new EventsApi(config);
const attempts = new AttemptsApi(config);
const metrics = new MetricsApi(config);
const tenantId = 'ts-co';

async function main(step: string, args: string[]): Promise<unknown> {
  if (step === 'setup') {
    const tenant = await tenants.upsertTenant({ tenantId });
    const destination = await destinations.createTenantDestination({
      tenantId,
      destinationCreate: { type: 'webhook', topics: '*', config: { url: process.env.HOOK_URL! } },
    });
    const published = await publish.publishEvent({ publishRequest: { tenantId, topic: 'user.created', data: { n: 1 } } });
    return { tenant: tenant.id, destination: destination.id, type: destination.type, event: published.id, routed: published.destinationIds };
  }
  if (step === 'read') {
    const listed = await events.listTenantEvents({ tenantId });
    const event = await events.getTenantEvent({ tenantId, eventId: args[0]! });
    const page = await attempts.listTenantAttempts({ tenantId, include: 'event' });
    return {
      events: listed.models.map((e) => e.id),
      event: { id: event.id, data: event.data },
      attempts: page.models.map((a) => ({ status: a.status, event: a.event?.id ?? null })),
    };
  }
  if (step === 'metrics') {
    // Either form answers MetricsAnswer (oneOf): the generated client tells them apart.
    const ours = await metrics.getTenantAttemptMetrics({ tenantId });
    const theirs = await metrics.getTenantAttemptMetrics({
      tenantId,
      measures: 'count',
      timeStart: new Date(Date.now() - 86_400_000),
      timeEnd: new Date(Date.now() + 60_000),
    });
    return {
      ours: 'series' in ours ? { total: ours.total, bucket: ours.bucket } : null,
      theirs: 'data' in theirs ? { points: theirs.data.length } : null,
    };
  }
  const [destinationId, eventId] = args as [string, string];
  const retried = await attempts.retryEvent({ retryRequest: { eventId, destinationId } });
  const deleted = await destinations.deleteTenantDestination({ tenantId, destinationId });
  let gone = 200;
  try {
    await destinations.getTenantDestination({ tenantId, destinationId });
  } catch (err) {
    if (err instanceof ResponseError) gone = err.response.status;
  }
  return { retried: retried.success, deleted: deleted.success, gone };
}

main(process.argv[2]!, process.argv.slice(3)).then((out) => console.log(JSON.stringify(out)));
`;

t.test('a TypeScript client from openapi-generator typescript-fetch: generated, compiled, a round trip', async (t) => {
  const d = await deployment(t, 'typescript-client');
  const app = join(d.scratch, 'app');
  mkdirSync(app);
  generate(d, 'typescript-fetch', join(app, 'client'), { supportsES6: 'true' });
  writeFileSync(join(app, 'roundtrip.ts'), CONSUMER);
  const tsconfig = {
    compilerOptions: {
      module: 'commonjs',
      moduleResolution: 'node10',
      target: 'es2022',
      lib: ['es2022', 'dom'],
      strict: true,
      types: [],
      outDir: 'out',
    },
    files: ['roundtrip.ts'],
  };
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(tsconfig));
  run(process.execPath, [TSC, '-p', 'tsconfig.json'], app);

  await checkRoundTrip(t, d, 'ts-co', process.execPath, join(app, 'out/roundtrip.js'), app);
  const env = { ...process.env, BASE_URL: d.baseUrl, API_KEY: d.apiKey };
  const metrics = JSON.parse(
    execFileSync(process.execPath, [join(app, 'out/roundtrip.js'), 'metrics'], { cwd: app, env, encoding: 'utf8' }),
  );
  t.match(metrics, { ours: { total: Number, bucket: String }, theirs: { points: Number } }, 'both metrics forms read through it');
  t.ok(metrics.ours.total >= 1, 'our form counts the round trip');
});
