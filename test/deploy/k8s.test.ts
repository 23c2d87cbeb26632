// The Kubernetes manifests (infra/k8s): the base and the production overlay render with the real
// kustomize (built once from its Go module, infra/k8s/kustomize.sh), every object validates against
// the Kubernetes API schemas (kubernetes-models: the official OpenAPI schemas compiled to Ajv
// validators, shipped in the npm package, so no schema is fetched at test time) and the KEDA CRD's
// (@kubernetes-models/keda); and what the schemas cannot know holds: one Deployment per service
// with probes on the endpoints the services serve, memory requests above the benchmark's peaks,
// settings that exist, and autoscalers on the consumer groups and topics the code uses.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
import { SETTINGS } from '@switchyard/shared/config/index.ts';
import { GROUP, TOPIC } from '@switchyard/shared/bus/topics.ts';
import { ROOT } from '@switchyard/shared/testing/index.ts';

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
    const secretKeys = readFileSync(join(ROOT, 'infra/k8s/overlays/production/secrets.env.example'), 'utf8')
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.split('=')[0] as string);
    for (const k of [...Object.keys(config.data ?? {}), ...secretKeys]) t.ok(k in SETTINGS, `${k} is a setting`);
    for (const s of Object.entries(SETTINGS))
      if ('required' in s[1] && s[1].required) t.ok(secretKeys.includes(s[0]), `${s[0]} in the secret`);

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
      t.equal(c.readinessProbe.httpGet.path, '/readyz');
      t.equal(c.startupProbe.httpGet.path, '/livez');
      t.equal(d.spec.template.metadata.annotations['prometheus.io/port'], String(port), `${s} is scraped where /metrics is`);
      const mem = String(c.resources.requests.memory);
      const mib = Number(mem.replace(/Mi$/, ''));
      t.ok(mem.endsWith('Mi') && mib * 1.048576 >= (peaks[s] ?? Number.POSITIVE_INFINITY), `${s} requests ${mem} >= peak ${peaks[s]} MB`);
      t.ok(c.resources.requests.cpu, `${s} requests CPU`);
      t.ok(d.spec.template.spec.terminationGracePeriodSeconds > 30, `${s} outlasts the 30 s shutdown grace`);
    }

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
  });
}

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
