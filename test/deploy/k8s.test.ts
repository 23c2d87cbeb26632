// The Kubernetes manifests (infra/k8s): the base and the production overlay render with the real
// kustomize (built once from its Go module, infra/k8s/kustomize.sh), every object validates against
// the Kubernetes API schemas (kubernetes-models: the official OpenAPI schemas compiled to Ajv
// validators, shipped in the npm package, so no schema is fetched at test time) and the KEDA CRD's
// (@kubernetes-models/keda); and what the schemas cannot know holds: one Deployment per service
// with probes on the endpoints the services serve (the gateway's readiness without Kafka), memory
// requests above the benchmark's peaks, settings that exist, secrets only where their settings are
// read, termination grace above the shutdown grace, one disruption budget per Deployment, and
// autoscalers on the consumer groups and topics the code uses.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Service } from 'kubernetes-models/v1/Service';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import t from 'tap';
import { parseAllDocuments } from 'yaml';
import { type Config, SETTINGS, settingsOf } from '@switchyard/shared/config/index.ts';
import { GROUP, TOPIC } from '@switchyard/shared/bus/topics.ts';
import { createCipher } from '@switchyard/shared/crypto.ts';
import type { Knex } from '@switchyard/shared/db/index.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import type { Readiness } from '@switchyard/shared/ops.ts';
import { SHUTDOWN_GRACE_MS, shutdownGraceMs } from '@switchyard/shared/process.ts';
import { ROOT, testConfig } from '@switchyard/shared/testing/index.ts';
import { build } from '../../services/gateway/src/app.ts';

type Obj = { apiVersion: string; kind: string; metadata: { name: string }; spec?: any; data?: Record<string, string> };

const MODELS: Record<string, new (o: any) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/Ingress': Ingress,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
};

function render(dir: string): Obj[] {
  const tool = spawnSync('bash', [join(ROOT, 'infra/k8s/kustomize.sh')], { encoding: 'utf8', timeout: 15 * 60_000 });
  if (tool.status !== 0) throw new Error(`infra/k8s/kustomize.sh failed:\n${tool.stderr}`);
  const r = spawnSync(tool.stdout.trim(), ['build', join(ROOT, dir)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kustomize build ${dir}:\n${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj);
}

const SERVICES = ['gateway', 'router', 'sender', 'attempts'] as const;

/** The secrets the overlay creates, each from its example file (keys only). */
const SECRET_FILES: Record<string, string> = {
  'switchyard-secrets': 'infra/k8s/overlays/production/secrets.env.example',
  'switchyard-gateway-secrets': 'infra/k8s/overlays/production/gateway-secrets.env.example',
};
const secretKeysOf = (name: string): string[] => {
  const file = join(ROOT, SECRET_FILES[name] as string);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => /^[A-Z_]+=/.test(l))
    .map((l) => l.split('=')[0] as string);
};

type Labels = Record<string, string>;
/** Whether a matchLabels selector selects pods with these labels. */
const selects = (selector: Labels, labels: Labels) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** A setting of a Deployment's container as the process sees it: its env, else the ConfigMap, else the default. */
function settingOf(d: Obj, config: Obj, name: keyof typeof SETTINGS): string {
  const env = (d.spec.template.spec.containers[0].env ?? []) as Array<{ name: string; value?: string }>;
  return env.find((e) => e.name === name)?.value ?? config.data?.[name] ?? (SETTINGS[name] as { default?: string }).default ?? '';
}

/** The onShutdown grace each service's main.ts passes, from the settings the pod gets. */
function shutdownGraceOf(service: (typeof SERVICES)[number], d: Obj, config: Obj): number {
  if (service === 'sender') return shutdownGraceMs(Number(settingOf(d, config, 'DELIVERY_TIMEOUT_SECONDS')) * 1000);
  if (service === 'gateway') return shutdownGraceMs(Number(settingOf(d, config, 'PUBLISH_TIMEOUT_MS')));
  return SHUTDOWN_GRACE_MS;
}

/**
 * Another sender Deployment, for `type`, made as docs/operations.md ("Kubernetes") says: a copy of
 * the sender's Deployment, ScaledObject and PodDisruptionBudget with the type, the names and the
 * instance label changed (and the ScaledObject's group and topic).
 */
function copySender(objects: Obj[], type: 'sqs', prefix: string): Obj[] {
  const name = `switchyard-sender-${type}`;
  const instance = `sender-${type}`;
  const d = structuredClone(objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'switchyard-sender')) as Obj;
  const so = structuredClone(objects.find((o) => o.kind === 'ScaledObject' && o.spec.scaleTargetRef.name === 'switchyard-sender')) as Obj;
  const pdbs = objects.filter(
    (o) => o.kind === 'PodDisruptionBudget' && selects(o.spec.selector.matchLabels, d.spec.template.metadata.labels),
  );
  const pdb = structuredClone(pdbs.find((o) => o.metadata.name === 'switchyard-sender')) as Obj;
  d.metadata.name = name;
  d.spec.selector.matchLabels['app.kubernetes.io/instance'] = instance;
  d.spec.template.metadata.labels['app.kubernetes.io/instance'] = instance;
  for (const e of d.spec.template.spec.containers[0].env as Array<{ name: string; value: string }>)
    if (e.name === 'SENDER_TYPES') e.value = type;
  so.metadata.name = name;
  so.spec.scaleTargetRef.name = name;
  so.spec.triggers[0].metadata.consumerGroup = `${prefix}${GROUP.sender(type)}`;
  so.spec.triggers[0].metadata.topic = `${prefix}${TOPIC.deliveries[type].name}`;
  pdb.metadata.name = name;
  pdb.spec.selector.matchLabels['app.kubernetes.io/instance'] = instance;
  return [d, so, pdb];
}

/** Deployments whose selectors overlap (one selects the other's pods), and how many budgets cover each. */
function disruptionLayout(objects: Obj[]) {
  const deployments = objects.filter((o) => o.kind === 'Deployment');
  const pdbs = objects.filter((o) => o.kind === 'PodDisruptionBudget');
  const overlaps: string[] = [];
  for (const a of deployments)
    for (const b of deployments)
      if (a !== b && selects(a.spec.selector.matchLabels, b.spec.template.metadata.labels))
        overlaps.push(`${a.metadata.name} selects ${b.metadata.name}'s pods`);
  const budgets = Object.fromEntries(
    deployments.map((d) => [
      d.metadata.name,
      pdbs.filter((p) => selects(p.spec.selector.matchLabels, d.spec.template.metadata.labels)).map((p) => p.metadata.name),
    ]),
  );
  return { overlaps, budgets };
}

for (const dir of ['infra/k8s/base', 'infra/k8s/overlays/production']) {
  t.test(`${dir} renders and validates`, async (t) => {
    const objects = render(dir);
    t.ok(objects.length >= 14, `${objects.length} objects`);
    for (const o of objects) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      if (!Model) {
        t.fail(`${o.apiVersion} ${o.kind} has no schema here: add its model`);
        continue;
      }
      t.doesNotThrow(() => new Model(o).validate(), `${o.kind} ${o.metadata.name} is valid`);
    }

    const config = objects.find((o) => o.kind === 'ConfigMap') as Obj;
    const deployments = new Map(objects.filter((o) => o.kind === 'Deployment').map((d) => [d.metadata.name, d]));
    t.same([...deployments.keys()].sort(), SERVICES.map((s) => `switchyard-${s}`).sort(), 'one Deployment per service');

    // Every setting named exists in the configuration catalogue (a typo would be silently ignored).
    for (const [name, file] of Object.entries(SECRET_FILES)) t.ok(existsSync(join(ROOT, file)), `${file} lists the keys of ${name}`);
    const secretKeys = Object.keys(SECRET_FILES).flatMap(secretKeysOf);
    for (const k of [...Object.keys(config.data ?? {}), ...secretKeys]) t.ok(k in SETTINGS, `${k} is a setting`);
    // Each service gets the secrets it reads and no other (SERVICE_SECTIONS): the sender, which
    // talks to tenants' endpoints, never holds the admin key or the key that signs tenant tokens.
    for (const s of SERVICES) {
      const d = deployments.get(`switchyard-${s}`) as Obj;
      const refs = (d.spec.template.spec.containers[0].envFrom as Array<{ secretRef?: { name: string } }>).flatMap((e) =>
        e.secretRef ? [e.secretRef.name] : [],
      );
      for (const r of refs) t.ok(r in SECRET_FILES, `${s}: the secret ${r} is one the overlay creates`);
      const got = refs.filter((r) => r in SECRET_FILES).flatMap(secretKeysOf);
      const reads = settingsOf(s) as string[];
      t.same(
        got.filter((k) => !reads.includes(k)),
        [],
        `${s} gets no secret it does not read`,
      );
      const required = reads.filter((k) => (SETTINGS as Record<string, { required?: boolean }>)[k]?.required);
      const provided = [...got, ...Object.keys(config.data ?? {})];
      t.same(
        required.filter((k) => !provided.includes(k)),
        [],
        `${s} gets every required setting it reads`,
      );
    }

    // The cluster settings of docs/operations.md ("Production topology"): three replicas, two in
    // sync, so one broker may be down while every accepted event is on two.
    t.equal(config.data?.KAFKA_REPLICATION_FACTOR, '3', 'topics keep three replicas');
    t.equal(config.data?.KAFKA_MIN_INSYNC_REPLICAS, '2', 'a write is accepted once two replicas have it');

    // Memory requests above each service's peak RSS in the recorded benchmark (any phase, the
    // highest sample or the kernel's high-water mark).
    const baseline = JSON.parse(readFileSync(join(ROOT, 'bench/results/baseline.json'), 'utf8')) as {
      phases: Array<{ machine: { procs: Record<string, { rssMaxMb: number; hwmMb?: number }> } }>;
    };
    const peaks: Record<string, number> = {};
    for (const phase of baseline.phases)
      for (const s of SERVICES) {
        const p = phase.machine.procs[s];
        if (p) peaks[s] = Math.max(peaks[s] ?? 0, p.rssMaxMb, p.hwmMb ?? 0);
      }
    t.equal(Object.keys(peaks).length, 4, `peaks read from the baseline: ${JSON.stringify(peaks)}`);

    const metricsPort = Number(config.data?.METRICS_PORT);
    t.equal(config.data?.METRICS_HOST, '0.0.0.0', 'the metrics listener is reachable from the kubelet and Prometheus');
    for (const s of SERVICES) {
      const d = deployments.get(`switchyard-${s}`) as Obj;
      const c = d.spec.template.spec.containers[0];
      t.match(c.command.join(' '), new RegExp(`^node dist/services/${s}/src/main\\.js$`), `${s} runs its built main`);
      const port = c.ports.find((p: { name: string }) => p.name === c.readinessProbe.httpGet.port).containerPort;
      t.equal(port, s === 'gateway' ? Number(config.data?.API_PORT) : metricsPort, `${s} probes the port it serves them on`);
      t.equal(c.livenessProbe.httpGet.path, '/livez');
      // The gateway's on /healthz, Postgres only: a Kafka outage must not empty its Service (the
      // behaviour is checked below); the consumers' on /readyz (they have no Service).
      t.equal(c.readinessProbe.httpGet.path, s === 'gateway' ? '/healthz' : '/readyz', `${s} readiness path`);
      t.equal(c.startupProbe.httpGet.path, '/livez');
      t.equal(d.spec.template.metadata.annotations['prometheus.io/port'], String(port), `${s} is scraped where /metrics is`);
      const mem = String(c.resources.requests.memory);
      const mib = Number(mem.replace(/Mi$/, ''));
      t.ok(mem.endsWith('Mi') && mib * 1.048576 >= (peaks[s] ?? Number.POSITIVE_INFINITY), `${s} requests ${mem} >= peak ${peaks[s]} MB`);
      t.ok(c.resources.requests.cpu, `${s} requests CPU`);
      // The kubelet's SIGKILL comes terminationGracePeriodSeconds after the preStop hook began: the
      // hook, then onShutdown's grace (services' main.ts), then 10 s to spare.
      const preStop = c.lifecycle?.preStop;
      const preStopSeconds = Number(preStop?.sleep?.seconds ?? 0);
      if (s === 'gateway') {
        // Endpoints go asynchronously: the gateway keeps listening a while after it is marked terminating.
        t.ok(preStopSeconds >= 5, `the gateway sleeps ${preStopSeconds} s before its SIGTERM`);
        t.notOk(preStop?.exec, 'the native sleep action, no binary needed in the image');
      } else t.notOk(preStop, `${s} has no preStop hook: it has no Service`);
      const grace = shutdownGraceOf(s, d, config) / 1000;
      const tgps = d.spec.template.spec.terminationGracePeriodSeconds;
      t.ok(
        tgps >= preStopSeconds + grace + 10,
        `${s}: terminationGracePeriodSeconds ${tgps} >= preStop ${preStopSeconds} + grace ${grace} + 10`,
      );
    }

    // Drains and autoscaler consolidation take one pod of a Deployment at a time, whatever its
    // replicas; each Deployment has one budget, and no Deployment selects another's pods.
    for (const p of objects.filter((o) => o.kind === 'PodDisruptionBudget')) {
      t.equal(p.spec.maxUnavailable, 1, `${p.metadata.name}: maxUnavailable 1`);
      t.notOk('minAvailable' in p.spec, `${p.metadata.name}: no minAvailable`);
    }
    const layout = disruptionLayout(objects);
    t.same(layout.overlaps, [], 'no Deployment selects the pods of another');
    for (const [name, budgets] of Object.entries(layout.budgets))
      t.equal(budgets.length, 1, `${name} is covered by one budget: ${budgets}`);

    // Autoscaling on lag: the consumer groups and topics the services consume, with the prefix.
    const prefix = config.data?.KAFKA_TOPIC_PREFIX ?? '';
    const expected: Record<string, Array<[string, string]>> = {
      'switchyard-router': [[GROUP.router, TOPIC.events.name]],
      'switchyard-sender': [[GROUP.sender('webhook'), TOPIC.deliveries.webhook.name]],
      'switchyard-attempts': [
        [GROUP.attempts, TOPIC.attempts.name],
        [GROUP.attemptsRouted, TOPIC.routed.name],
      ],
    };
    const scaled = objects.filter((o) => o.kind === 'ScaledObject');
    t.equal(scaled.length, 3);
    for (const so of scaled) {
      const target = so.spec.scaleTargetRef.name as string;
      t.ok(deployments.has(target), `${so.metadata.name} scales a Deployment of this deployment`);
      const triggers = so.spec.triggers.map((tr: { type: string; metadata: Record<string, string> }) => {
        t.equal(tr.type, 'kafka');
        t.equal(tr.metadata.bootstrapServersFromEnv, 'KAFKA_BROKERS');
        return [tr.metadata.consumerGroup, tr.metadata.topic];
      });
      t.same(
        triggers,
        (expected[target] ?? []).map(([g, topic]) => [`${prefix}${g}`, `${prefix}${topic}`]),
        `${target} scales on its groups' lag`,
      );
      t.ok(so.spec.maxReplicaCount <= Number(config.data?.KAFKA_PARTITIONS), 'no more replicas than partitions');
      // docs/operations.md ("Production topology"): two members of each group at least.
      t.ok(so.spec.minReplicaCount >= 2, `${so.metadata.name}: two replicas at least, so a crash only moves partitions`);
    }
    t.ok(objects.some((o) => o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef.name === 'switchyard-gateway'));

    // A sender for another type, copied as documented, is a Deployment of its own: its own
    // selector, budget and autoscaler.
    const copy = copySender(objects, 'sqs', prefix);
    for (const o of copy) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`] as (typeof MODELS)[string];
      t.doesNotThrow(() => new Model(o).validate(), `the copy's ${o.kind} is valid`);
    }
    const withCopy = disruptionLayout([...objects, ...copy]);
    t.same(withCopy.overlaps, [], 'the copied sender and the original select only their own pods');
    t.same(withCopy.budgets['switchyard-sender'], ['switchyard-sender'], "the webhook sender's budget is its own");
    t.same(withCopy.budgets['switchyard-sender-sqs'], ['switchyard-sender-sqs'], "the sqs sender's budget is its own");
  });
}

t.test("the gateway's readiness probe keeps it in its Service while Kafka is away", async (t) => {
  const gateway = render('infra/k8s/base').find((o) => o.kind === 'Deployment' && o.metadata.name === 'switchyard-gateway') as Obj;
  const path = gateway.spec.template.spec.containers[0].readinessProbe.httpGet.path as string;
  // The gateway app on the probe's path: Kafka away (the metadata request fails), Postgres as set.
  let postgres = true;
  const db = {
    raw: async () => {
      if (!postgres) throw new Error('connect ECONNREFUSED');
      return { rows: [{ '?column?': 1 }] };
    },
  } as unknown as Knex;
  const refuse = async () => {
    throw new Error('Kafka away');
  };
  const config: Config = testConfig();
  const app = await build(config, {
    db,
    producer: { send: refuse, sendMany: refuse, close: async () => {} },
    logger: createLogger('k8s-test', 'silent'),
    cipher: createCipher(config.AES_ENCRYPTION_SECRET),
    readiness: async (): Promise<Readiness> => ({ ready: false, checks: { postgres: postgres ? 'ok' : 'failed', kafka: 'failed' } }),
  });
  t.teardown(() => app.close());
  t.equal((await app.inject({ method: 'GET', url: path })).statusCode, 200, `${path}: ready while Kafka is away`);
  t.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 503, '/readyz (not the probe) names Kafka');
  postgres = false;
  t.equal((await app.inject({ method: 'GET', url: path })).statusCode, 503, `${path}: not ready without Postgres`);
});

t.test('the group names the autoscalers use are the ones the services consume', async (t) => {
  // The services name their groups from the catalogue the autoscalers above are checked against.
  const groups = (file: string) => [...readFileSync(join(ROOT, file), 'utf8').matchAll(/groupId: ([^,\n]+),/g)].map((m) => m[1]);
  t.same(groups('services/router/src/service.ts'), ['GROUP.router']);
  t.same(groups('services/attempts/src/service.ts'), ['GROUP.attemptsRouted', 'GROUP.attempts']);
  // sender-<type> for each type: the manifests run one sender Deployment, for webhook. The
  // destination-changes reader is a broadcast (one group per instance, never lagging), so no
  // autoscaler watches it.
  t.same(groups('services/sender/src/service.ts'), ["'sender-destination-changes'", 'GROUP.sender(type)', 'GROUP.retryScheduler']);
  t.equal(GROUP.sender('webhook'), 'sender-webhook');
});

t.test('the production overlay sets its namespace, image, brokers and public address', async (t) => {
  const objects = render('infra/k8s/overlays/production');
  for (const o of objects.filter((x) => x.kind !== 'Namespace')) t.equal((o.metadata as { namespace?: string }).namespace, 'switchyard');
  for (const d of objects.filter((o) => o.kind === 'Deployment'))
    t.equal(d.spec.template.spec.containers[0].image, 'registry.example.com/switchyard:0.1.0');
  const config = (objects.find((o) => o.kind === 'ConfigMap') as Obj).data;
  t.match(config?.KAFKA_BROKERS, /kafka-0/);
  // The portal's redirect_url is built from it: without, it would be http://0.0.0.0:3333/portal.
  const ingressHost = (objects.find((o) => o.kind === 'Ingress') as Obj).spec.rules[0].host;
  t.equal(config?.API_BASE_URL, `https://${ingressHost}`, "API_BASE_URL is the ingress's address");
  // Public: the API and the tenant portal its redirect_url links to (/portal?token=...); not /metrics or the probes.
  const ingress = objects.find((o) => o.kind === 'Ingress') as Obj;
  type Path = { path: string; pathType: string; backend: { service: { name: string } } };
  const paths: Path[] = ingress.spec.rules.flatMap((r: { http: { paths: Path[] } }) => r.http.paths);
  t.same(
    paths.map((p) => [p.path, p.pathType, p.backend.service.name]),
    [
      ['/api/', 'Prefix', 'switchyard-gateway'],
      ['/portal', 'Prefix', 'switchyard-gateway'],
    ],
  );
});

t.test('the validators refuse what Kubernetes and KEDA would refuse', async (t) => {
  const [deployment, scaled] = [
    render('infra/k8s/base').find((o) => o.kind === 'Deployment'),
    render('infra/k8s/base').find((o) => o.kind === 'ScaledObject'),
  ] as Obj[];
  const broken = structuredClone(deployment) as Obj;
  broken.spec.template.spec.containers[0].ports[0].containerPort = 'http';
  t.throws(() => new Deployment(broken as never).validate(), 'a port that is not a number');
  const noTarget = structuredClone(scaled) as Obj;
  delete noTarget.spec.scaleTargetRef;
  t.throws(() => new ScaledObject(noTarget as never).validate(), 'a ScaledObject without its target');
  const numeric = structuredClone(scaled) as Obj;
  numeric.spec.triggers[0].metadata.lagThreshold = 2000;
  t.throws(() => new ScaledObject(numeric as never).validate(), 'trigger metadata must be strings');
});
