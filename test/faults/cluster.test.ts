// Faults of a Kafka cluster: three brokers and a controller of this suite's own
// (infra/kafka/cluster.sh; the test command's single broker is left alone).
//
// First, one write across a partition leader change, made to happen at a chosen moment: every
// record of it is written (kafkajs left out the records of a partition whose new leader had already
// answered for another; shared/src/kafka/kafkajs/acked.ts).
//
// Then the services under steady load, in stack mode: topics with replication factor 3 and
// min.insync.replicas 2, two instances of every service. One run, one fault after the other, each
// while events keep coming at a steady rate to several tenants and destinations:
//   leader      SIGKILL of the broker leading the busiest partition of the events topic
//   below-isr   SIGKILL of a second broker (one left: below min.insync.replicas), publishes are
//               answered 503, then both brokers return
//   rolling     every broker stopped and started again, one by one, each once its replicas are
//               back in sync
//   partitions  partitions added to the events topic, then the procedure of docs/operations.md:
//               the consumer groups of the topic restarted one member at a time, then the gateways
//   services    SIGKILL of one instance of each service, started again
// Every event answered 202 must reach its destinations' receivers and a final attempt, seen both in
// the database and through the attempts API; duplicates stay within the in-flight window. Each
// phase's figures (accepted, lost, duplicates, time to recover) are printed as a row of the fault
// table in docs/operations.md.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import kafkajs, { type Admin, type ISocketFactory } from 'kafkajs';
import t, { type Test } from 'tap';
import { createDb } from '@switchyard/shared/db/index.ts';
import { createKafkaBus } from '@switchyard/shared/kafka/index.ts';
import { partitionOfKey } from '@switchyard/shared/kafka/partitioner.ts';
import type { TopicDef } from '@switchyard/shared/bus/topics.ts';
import { createLogger } from '@switchyard/shared/log.ts';
import {
  apiClient,
  createTestDatabase,
  freePort,
  ROOT,
  type ServiceProcess,
  startReceiver,
  startService,
  testEnv,
  uniqueName,
  waitFor,
} from '@switchyard/shared/testing/index.ts';

const run$ = promisify(execFile);
const require = createRequire(import.meta.url);
const SERVICES = ['attempts', 'router', 'sender', 'gateway'] as const;
type Service = (typeof SERVICES)[number];
const PHASES = ['steady', 'leader', 'below-isr', 'rolling', 'partitions', 'services'] as const;
type Phase = (typeof PHASES)[number];

/** Target publish rate (events/s) and the most publishes in flight; the machine may allow less. */
const RATE = Number(process.env.SWITCHYARD_CLUSTER_RATE ?? 100);
const IN_FLIGHT = 24;
/** Tenants and their share of the load: the first is the busiest, so its partition is. */
const TENANTS = [
  { id: 'c0', share: 0.4, destinations: 2 },
  { id: 'c1', share: 0.2, destinations: 2 },
  { id: 'c2', share: 0.2, destinations: 1 },
  { id: 'c3', share: 0.2, destinations: 1 },
];
const PARTITIONS = 4;
const ADDED_PARTITIONS = 6;

interface PhaseStats {
  started: number;
  accepted: Set<string>;
  refused: Record<string, number>;
  /** How long each 503 took to come back, ms. */
  refusedMs: number[];
  /** Time from the fault (or the brokers' return) until every tenant's new events arrive again, ms. */
  recoveredMs: number | null;
  note: string;
}

// Four JVMs and eight services on a machine shared with other suites: a few minutes when it is
// quiet, much longer when it is not (every wait is bounded by progress, not by this).
t.setTimeout(30 * 60_000);

const run = mkdtempSync(join(process.env.SWITCHYARD_TEST_RUN ?? '/tmp', 'kafka-cluster-'));
const [controllerPort, ...brokerPorts] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
// Asynchronous: a broker start takes seconds, and the receivers and the load live in this process.
const cluster = async (...args: string[]) =>
  (
    await run$('bash', [`${ROOT}infra/kafka/cluster.sh`, ...args], {
      env: {
        ...process.env,
        KAFKA_CLUSTER_DIR: run,
        KAFKA_CLUSTER_PORTS: brokerPorts.join(','),
        KAFKA_CLUSTER_CONTROLLER_PORT: String(controllerPort),
      },
    })
  ).stdout.trim();
t.teardown(async () => {
  await cluster('stop');
  rmSync(run, { recursive: true, force: true });
});
await cluster('start');
const brokers = await cluster('brokers');

/**
 * A topic of two partitions, 0 led by broker 2 and 1 by broker 1, each replicated on both, and a
 * Kafka bus producer whose produce requests to a broker can be held: `hold(node)` keeps the next
 * one from being written until `release(node)` writes it (or the test cuts its connection).
 * Broker n listens on brokerPorts[n - 1].
 */
async function twoLeaders(t: Test, label: string) {
  const admin = new kafkajs.Kafka({ clientId: label, brokers: brokers.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const prefix = `${uniqueName(label)}.`;
  const topic: TopicDef = { name: 'moved', key: 'k', description: 'two partitions, two leaders' };
  const name = `${prefix}${topic.name}`;
  await admin.createTopics({
    waitForLeaders: true,
    topics: [
      {
        topic: name,
        replicaAssignment: [
          { partition: 0, replicas: [2, 1] },
          { partition: 1, replicas: [1, 2] },
        ],
        // Partition 1 ends with one replica: writable on its own.
        configEntries: [{ name: 'min.insync.replicas', value: '1' }],
      },
    ],
  });
  // Removed at the end: its partition 1 lives on broker 2 alone, and once the last test kills broker
  // 2 an offline partition fails every kafkajs client's first metadata request (for all topics).
  t.teardown(() => admin.deleteTopics({ topics: [name] }));
  const partitions = async () => (await admin.fetchTopicMetadata({ topics: [name] })).topics[0]?.partitions ?? [];
  await waitFor(
    'partition 0 led by broker 2 and partition 1 by broker 1, both in sync',
    async () =>
      (await partitions())
        .map((p) => `${p.partitionId}:${p.leader}:${p.isr.length}`)
        .sort()
        .join() === '0:2:2,1:1:2',
    60_000,
  );

  const armed = new Set<number>();
  const held = new Map<number, { socket: Socket; write: () => void }>();
  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    const socket = connect({ host, port }, onConnect);
    const write = socket.write.bind(socket) as (chunk: Buffer, encoding: BufferEncoding) => boolean;
    socket.write = ((chunk: Buffer, encoding: BufferEncoding) => {
      // A request is its size, then its API key (0: Produce).
      if (Buffer.isBuffer(chunk) && chunk.readInt16BE(4) === 0 && armed.delete(port)) {
        held.set(port, { socket, write: () => write(chunk, encoding) });
        return true;
      }
      return write(chunk, encoding);
    }) as typeof socket.write;
    return socket;
  };
  const portOf = (node: number) => brokerPorts[node - 1] as number;
  const bus = createKafkaBus({
    brokers: brokers.split(','),
    clientId: label,
    topicPrefix: prefix,
    partitions: 2,
    replicationFactor: 2,
    log: createLogger('test', 'silent'),
    kafkajs: { socketFactory },
  });
  t.teardown(() => bus.close());
  const producer = await bus.producer();
  const keyOf = (partition: number) => {
    for (let i = 0; ; i++) if (partitionOfKey(`k${i}`, 2) === partition) return `k${i}`;
  };
  return {
    /** Writes one record to each partition. */
    write: () =>
      producer.send(topic, [
        { key: keyOf(0), value: 'to broker 2' },
        { key: keyOf(1), value: 'to broker 1, then moved to broker 2' },
      ]),
    hold: (node: number) => armed.add(portOf(node)),
    held: (node: number) => waitFor(`the produce request to broker ${node}, held`, () => held.get(portOf(node)), 60_000),
    release: (node: number) => held.get(portOf(node))?.write(),
    cut: (node: number) => held.get(portOf(node))?.socket.destroy(new Error('cut by the test')),
    /** Partition 1 moved to broker 2 alone. */
    moveToBroker2: async () => {
      await admin.alterPartitionReassignments({ topics: [{ topic: name, partitionAssignment: [{ partition: 1, replicas: [2] }] }] });
      await waitFor('partition 1 led by broker 2', async () => (await partitions()).find((p) => p.partitionId === 1)?.leader === 2, 60_000);
    },
    /** Each partition's record count, as `partition:count`. */
    counts: async () => (await admin.fetchTopicOffsets(name)).map((p) => `${p.partition}:${p.high}`).sort(),
  };
}

t.test('a write across a partition leader change: every record is written', async (t) => {
  // The request to broker 1 is held (never sent) until partition 1 has moved to broker 2, which has
  // meanwhile answered for partition 0; then its connection breaks. kafkajs retries only the
  // brokers without an answer, so it sent partition 1's record to nobody and resolved the write;
  // the adapter sends such records again.
  const topic = await twoLeaders(t, 'moved');
  topic.hold(1);
  const write = topic.write();
  await topic.held(1);
  await topic.moveToBroker2();
  topic.cut(1);
  await write;
  t.same(await topic.counts(), ['0:1', '1:1'], 'each partition holds its record: the one whose leader changed mid-write too');
});

t.test('a write whose other request is answered late: no record is written twice', async (t) => {
  // As above, but broker 2's request is held too, and written only once kafkajs's retry (which
  // starts when broker 1's request fails) waits to send broker 2 a request of its own. kafkajs puts
  // partition 0's record in that request again, since broker 2 had not answered when the retry
  // began, and numbers it as a new record; the broker wrote it twice. A request now leaves out
  // the records a broker has already acknowledged.
  const topic = await twoLeaders(t, 'late');
  const retryWaits = watchProducerLocks(t);
  topic.hold(1);
  topic.hold(2);
  const write = topic.write();
  await topic.held(1);
  await topic.held(2);
  await topic.moveToBroker2();
  topic.cut(1);
  await retryWaits;
  topic.release(2);
  await write;
  t.same(await topic.counts(), ['0:1', '1:1'], 'each partition holds its record once');
  // kafkajs had numbered the record it left out: the next write goes with a new producer, whose
  // numbers are the broker's (the old one's would be refused as out of sequence).
  await topic.write();
  t.same(await topic.counts(), ['0:2', '1:2'], 'the next write is taken');
});

/**
 * Resolves when a request of kafkajs's retry waits for the broker lock of an idempotent producer
 * (one request at a time to each broker, src/producer/eosManager): kafkajs's Lock is wrapped for
 * the test, and only the producer's locks (65,535 ms, no description) are watched.
 */
function watchProducerLocks(t: Test): Promise<void> {
  const Lock = require('kafkajs/src/utils/lock.js') as { prototype: { acquire(): Promise<void> } };
  const acquire = Lock.prototype.acquire;
  const field = (lock: object, name: string) => {
    const key = Object.getOwnPropertySymbols(lock).find((s) => s.description === `private:Lock:${name}`);
    return key ? (lock as Record<symbol, unknown>)[key] : undefined;
  };
  t.teardown(() => {
    Lock.prototype.acquire = acquire;
  });
  return new Promise((resolve) => {
    Lock.prototype.acquire = function (this: object) {
      const acquired = acquire.call(this);
      if (field(this, 'timeout') === 0xffff && (field(this, 'waiting') as Set<unknown> | undefined)?.size) resolve();
      return acquired;
    };
  });
}

t.test('a three-broker cluster: broker and service failures under steady load', async (t) => {
  const [gatewayPort, secondGatewayPort] = [await freePort(), await freePort()];
  const env = testEnv({
    KAFKA_BROKERS: brokers,
    KAFKA_REPLICATION_FACTOR: '3',
    KAFKA_MIN_INSYNC_REPLICAS: '2',
    KAFKA_PARTITIONS: String(PARTITIONS),
    DATABASE_URL: await createTestDatabase(t),
    API_PORT: String(gatewayPort),
    TOPICS: 'order.paid',
    SENDER_TYPES: 'webhook',
    // Short retries, so a delivery that failed while the machine was saturated is tried again soon.
    RETRY_SCHEDULE: '1,1,1,1,1',
  });
  const prefix = env.KAFKA_TOPIC_PREFIX as string;
  const eventsTopic = `${prefix}events`;
  const envOf = (name: Service, i: number) => (name === 'gateway' && i === 1 ? { ...env, API_PORT: String(secondGatewayPort) } : env);
  // Two instances of each service; the first of each creates the topics and migrates.
  const procs = {} as Record<Service, ServiceProcess[]>;
  for (const name of SERVICES) procs[name] = [await startService(t, name, envOf(name, 0))];
  await Promise.all(SERVICES.map(async (name) => procs[name].push(await startService(t, name, envOf(name, 1)))));
  const allProcs: ServiceProcess[] = Object.values(procs).flat();
  const restart = async (name: Service, i: number, signal: NodeJS.Signals) => {
    const p = procs[name][i] as ServiceProcess;
    await p.stop(signal);
    const again = await startService(t, name, envOf(name, i));
    procs[name][i] = again;
    allProcs.push(again);
  };

  const db = createDb({ url: env.DATABASE_URL as string, poolMax: 2 });
  t.teardown(() => db.destroy());
  const admin = new kafkajs.Kafka({ clientId: 'cluster-faults', brokers: brokers.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());

  const api = [gatewayPort, secondGatewayPort].map((p) => apiClient(`http://127.0.0.1:${p}`, env.API_KEY as string));
  const rx = await startReceiver(t);
  const destinations: Array<{ tenant: string; id: string; path: string }> = [];
  for (const tenant of TENANTS) {
    await api[0]?.('PUT', `/api/v1/tenants/${tenant.id}`);
    for (let d = 0; d < tenant.destinations; d++) {
      const path = `/${tenant.id}/${d}`;
      const res = await api[0]?.<{ id: string }>('POST', `/api/v1/tenants/${tenant.id}/destinations`, {
        type: 'webhook',
        topics: '*',
        config: { url: `${rx.url}${path}` },
      });
      destinations.push({ tenant: tenant.id, id: res?.body.id as string, path });
    }
  }

  // Steady load: RATE events a second, each id repeated (alternating gateways) until answered 202.
  const stats = new Map<Phase, PhaseStats>();
  const startPhase = (phase: Phase) => {
    stats.set(phase, { started: Date.now(), accepted: new Set(), refused: {}, refusedMs: [], recoveredMs: null, note: '' });
    current = phase;
  };
  let current: Phase = 'steady';
  startPhase('steady');
  const publishStart = new Map<string, number>();
  let publishing = true;
  let inFlight = 0;
  let n = 0;
  const tenantOf = (i: number) => {
    let x = (i * 0.618034) % 1;
    for (const tenant of TENANTS) {
      if (x < tenant.share) return tenant.id;
      x -= tenant.share;
    }
    return (TENANTS.at(-1) as (typeof TENANTS)[number]).id;
  };
  const publishOne = async (phase: Phase, tenant: string, id: string) => {
    const st = stats.get(phase) as PhaseStats;
    for (let attempt = 0; ; attempt++) {
      const began = Date.now();
      let status: number | string;
      try {
        const res = await fetch(`http://127.0.0.1:${attempt % 2 ? secondGatewayPort : gatewayPort}/api/v1/publish`, {
          method: 'POST',
          headers: { authorization: `Bearer ${env.API_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ tenant_id: tenant, id, topic: 'order.paid', data: { id } }),
          signal: AbortSignal.timeout(90_000),
        });
        await res.arrayBuffer();
        status = res.status;
      } catch (err) {
        status = (err as { cause?: { code?: string }; name?: string }).cause?.code ?? (err as Error).name ?? 'network';
      }
      if (status === 202) {
        st.accepted.add(id);
        return;
      }
      const now = stats.get(current) as PhaseStats;
      now.refused[status] = (now.refused[status] ?? 0) + 1;
      if (status === 503) now.refusedMs.push(Date.now() - began);
      if (!publishing && attempt > 600) throw new Error(`${id} never accepted`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const pending = new Set<Promise<void>>();
  const load = (async () => {
    const began = Date.now();
    while (publishing) {
      // Paced: the i-th event is due at i / RATE s; late ones go at once, in-flight permitting.
      const due = began + (n * 1000) / RATE;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      if (inFlight >= IN_FLIGHT) {
        await Promise.race(pending);
        continue;
      }
      const tenant = tenantOf(n);
      const id = `${current}.${tenant}.${n++}`;
      publishStart.set(id, Date.now());
      inFlight++;
      const p = publishOne(current, tenant, id).finally(() => {
        inFlight--;
        pending.delete(p);
      });
      pending.add(p);
    }
    await Promise.all(pending);
  })();

  // Progress every 15 s, for a run that fails or is slow (CI keeps no service logs).
  const progress = setInterval(() => {
    const st = stats.get(current) as PhaseStats;
    t.comment(
      `${current} +${Math.round((Date.now() - st.started) / 1000)} s: accepted ${acceptedCount()} (this phase ${st.accepted.size}), ` +
        `received ${rx.requests.length}, in flight ${inFlight}, refused ${JSON.stringify(st.refused)}`,
    );
  }, 15_000);
  t.teardown(() => clearInterval(progress));
  t.teardown(() => {
    if (!t.passing())
      for (const p of allProcs)
        for (const line of p
          .output()
          .split('\n')
          .filter((l) => /"level":(50|60)|"level":"(error|fatal)"/.test(l))
          .slice(-8))
          t.comment(`${p.name}: ${line.slice(0, 400)}`);
  });
  t.teardown(() => {
    publishing = false;
  });
  const acceptedCount = () => [...stats.values()].reduce((a, s) => a + s.accepted.size, 0);
  /** Waits until `count` more events are accepted: the load goes on (bounded by progress: 2 min without one fails). */
  const loadFor = async (count: number) => {
    const target = acceptedCount() + count;
    let last = acceptedCount();
    let lastAt = Date.now();
    await waitFor(
      `${count} more accepted events`,
      () => {
        const now = acceptedCount();
        if (now !== last) [last, lastAt] = [now, Date.now()];
        if (Date.now() - lastAt > 120_000) throw new Error(`no event accepted for 2 min (${now} of ${target})`);
        return now >= target;
      },
      30 * 60_000,
    );
  };
  /**
   * Time from `from` until every tenant has an event delivered that was first published after
   * `from` (ms): publishing and delivery flow again for all of them.
   */
  const recovery = async (from: number) => {
    let cursor = rx.requests.findIndex((r) => r.at >= from);
    if (cursor < 0) cursor = rx.requests.length;
    const firstAt = new Map<string, number>();
    // Bounded by progress: fails only when no delivery at all arrives for 2 minutes.
    let seen = rx.requests.length;
    let seenAt = Date.now();
    await waitFor(
      'deliveries of new events for every tenant',
      () => {
        for (; cursor < rx.requests.length; cursor++) {
          const r = rx.requests[cursor] as (typeof rx.requests)[number];
          const id = String(r.headers['x-outpost-event-id']);
          const tenant = id.split('.')[1] as string;
          if ((publishStart.get(id) ?? 0) > from && !firstAt.has(tenant)) firstAt.set(tenant, r.at);
        }
        if (rx.requests.length !== seen) [seen, seenAt] = [rx.requests.length, Date.now()];
        if (Date.now() - seenAt > 120_000)
          throw new Error(`no delivery for 2 min; tenants with new events delivered: ${[...firstAt.keys()].join(', ') || 'none'}`);
        return firstAt.size === TENANTS.length;
      },
      20 * 60_000,
    );
    return Math.max(...firstAt.values()) - from;
  };
  /** Every partition of this run's topics has all its replicas in sync again. */
  const inSync = () =>
    waitFor(
      'every replica in sync',
      async () => {
        const topics = (await admin.listTopics()).filter((name) => name.startsWith(prefix));
        const { topics: meta } = await admin.fetchTopicMetadata({ topics });
        return meta.every((tm) => tm.partitions.every((p) => p.isr.length === p.replicas.length && p.leader >= 0));
      },
      180_000,
    );

  await loadFor(RATE * 2);

  // 1. The leader of the busiest partition of the events topic dies.
  const offsets = await admin.fetchTopicOffsets(eventsTopic);
  const busiest = offsets.reduce((a, b) => (Number(b.high) > Number(a.high) ? b : a));
  const leaderOf = async (partition: number) =>
    ((await admin.fetchTopicMetadata({ topics: [eventsTopic] })).topics[0]?.partitions.find((p) => p.partitionId === partition)?.leader ??
      -1) as number;
  const leader = await leaderOf(busiest.partition);
  startPhase('leader');
  let at = Date.now();
  await cluster('kill', String(leader));
  (stats.get('leader') as PhaseStats).recoveredMs = await recovery(at);
  (stats.get('leader') as PhaseStats).note = `broker ${leader} (leader of events partition ${busiest.partition}, ${busiest.high} records)`;
  await loadFor(RATE * 3);

  // 2. A second broker dies: one left, below min.insync.replicas. Publishes are refused until
  // both come back.
  const second = [1, 2, 3].find((b) => b !== leader) as number;
  startPhase('below-isr');
  const below = stats.get('below-isr') as PhaseStats;
  await cluster('kill', String(second));
  await waitFor('publishes refused below min.insync.replicas', () => (below.refused[503] ?? 0) >= 20, 180_000);
  at = Date.now();
  await cluster('start', String(leader));
  await cluster('start', String(second));
  below.recoveredMs = await recovery(at);
  below.note = `brokers ${leader} and ${second}; recovery from their return`;
  await inSync();
  await loadFor(RATE * 2);

  // 3. Rolling restart: each broker stopped (a clean shutdown hands its leaderships over) and
  // started, the next one once every replica is back in sync.
  startPhase('rolling');
  const rolling = stats.get('rolling') as PhaseStats;
  at = Date.now();
  for (const node of [1, 2, 3]) {
    await cluster('stop', String(node));
    await cluster('start', String(node));
    await inSync();
  }
  rolling.note = `took ${Math.round((Date.now() - at) / 1000)} s`;
  rolling.recoveredMs = await recovery(Date.now());
  await loadFor(RATE * 2);

  // 4. More partitions for the events topic, under load, then the procedure of docs/operations.md:
  // each consumer group of the topic restarted a member at a time (kafkajs members pick up new
  // partitions only at a rebalance), then the gateways (their producers then write to them).
  startPhase('partitions');
  const partitions = stats.get('partitions') as PhaseStats;
  at = Date.now();
  await admin.createPartitions({ topicPartitions: [{ topic: eventsTopic, count: ADDED_PARTITIONS }] });
  for (const name of ['router', 'attempts', 'gateway'] as const) for (const i of [0, 1]) await restart(name, i, 'SIGTERM');
  partitions.recoveredMs = await recovery(at);
  const moved = TENANTS.filter((tn) => partitionOfKey(tn.id, PARTITIONS) !== partitionOfKey(tn.id, ADDED_PARTITIONS)).map((tn) => tn.id);
  const ends = await admin.fetchTopicOffsets(eventsTopic);
  partitions.note = `${PARTITIONS} -> ${ADDED_PARTITIONS}; tenants on another partition now: ${moved.join(', ') || 'none'}; records in the new partitions ${ends
    .filter((p) => p.partition >= PARTITIONS)
    .reduce((a, p) => a + Number(p.high), 0)}`;
  await loadFor(RATE * 2);

  // 5. One instance of each service dies by SIGKILL and is started again.
  startPhase('services');
  const services = stats.get('services') as PhaseStats;
  at = Date.now();
  await Promise.all(SERVICES.map((name) => restart(name, 0, 'SIGKILL')));
  services.recoveredMs = await recovery(at);
  services.note = 'one of two instances of each service';
  await loadFor(RATE * 3);

  publishing = false;
  await load;

  // Every accepted event: a final attempt of each destination, its deliveries at the receiver, and
  // a successful attempt through the attempts API. Waiting as long as attempts keep arriving.
  const all = new Map<string, Phase>();
  for (const [phase, st] of stats) for (const id of st.accepted) all.set(id, phase);
  const finals = async () => {
    const rows = (await db('attempts').where({ final: true }).select('event_id', 'destination_id')) as Array<{
      event_id: string;
      destination_id: string;
    }>;
    return new Set(rows.map((r) => `${r.event_id} ${r.destination_id}`));
  };
  const expected = [...all.keys()].flatMap((id) =>
    destinations.filter((d) => d.tenant === id.split('.')[1]).map((d) => ({ id, destination: d })),
  );
  let done = await finals();
  let lastSize = -1;
  let lastAt = Date.now();
  while (expected.some((e) => !done.has(`${e.id} ${e.destination.id}`)) && Date.now() - lastAt < 90_000) {
    if (done.size !== lastSize) [lastSize, lastAt] = [done.size, Date.now()];
    await new Promise((r) => setTimeout(r, 1000));
    done = await finals();
  }
  const viaApi = new Set<string>();
  for (const d of destinations) {
    let next: string | null = null;
    do {
      const page: { status: number; body: { models: Array<{ event_id: string }>; pagination: { next: string | null } } } = await (
        api[0] as ReturnType<typeof apiClient>
      )('GET', `/api/v1/tenants/${d.tenant}/destinations/${d.id}/attempts?limit=1000${next ? `&next=${encodeURIComponent(next)}` : ''}`);
      for (const a of page.body.models) viaApi.add(`${a.event_id} ${d.id}`);
      next = page.body.pagination.next;
    } while (next);
  }
  const received = new Map<string, number>();
  for (const r of rx.requests) {
    const key = `${r.headers['x-outpost-event-id']} ${r.url}`;
    received.set(key, (received.get(key) ?? 0) + 1);
  }

  const rows: string[] = [];
  for (const phase of PHASES) {
    const st = stats.get(phase) as PhaseStats;
    const mine = expected.filter((e) => all.get(e.id) === phase);
    const lost = mine.filter((e) => !done.has(`${e.id} ${e.destination.id}`)).length;
    const notReceived = mine.filter((e) => !received.has(`${e.id} ${e.destination.path}`)).length;
    const notInApi = mine.filter((e) => !viaApi.has(`${e.id} ${e.destination.id}`)).length;
    const duplicates = mine.reduce((a, e) => a + Math.max(0, (received.get(`${e.id} ${e.destination.path}`) ?? 0) - 1), 0);
    const ms = st.refusedMs.toSorted((a, b) => a - b);
    rows.push(
      `| ${phase} | ${st.accepted.size} (${mine.length} deliveries) | ${lost} / ${notReceived} / ${notInApi} | ${duplicates} | ` +
        `${st.recoveredMs === null ? '-' : `${(st.recoveredMs / 1000).toFixed(1)} s`} | ${JSON.stringify(st.refused)}` +
        `${ms.length ? `, 503 in p50 ${ms[Math.floor(ms.length / 2)]} ms / max ${ms.at(-1)} ms` : ''} | ${st.note} |`,
    );
    t.equal(lost, 0, `${phase}: every accepted event reached a final attempt of each destination`);
    t.equal(notReceived, 0, `${phase}: every accepted event reached each destination's receiver`);
    t.equal(notInApi, 0, `${phase}: every delivery shows its attempts through the attempts API`);
    // The router routes again what it had not committed, the senders deliver again what was in
    // flight when a member or a partition leader went away; commits fail until the groups have
    // rejoined, so the window is the fault's recovery plus 10 s of traffic, redone at most twice (a
    // group may rebalance again while rejoining); and never less than a quarter of the phase.
    const perEvent = mine.length / Math.max(1, st.accepted.size);
    const windowS = (st.recoveredMs ?? 0) / 1000 + 10;
    const bound = Math.max(2 * RATE * perEvent * windowS, mine.length * 0.25);
    t.ok(duplicates <= bound, `${phase}: duplicates (${duplicates}) within the window (${Math.round(bound)})`);
  }
  const belowIsr = stats.get('below-isr') as PhaseStats;
  t.ok((belowIsr.refused[503] ?? 0) > 0, 'publishes were answered 503 below min.insync.replicas');
  t.comment(`cluster faults at ${RATE} events/s target, ${acceptedCount()} accepted:`);
  t.comment('| phase | accepted | lost: no final attempt / not received / not in the API | duplicates | recovered in | refused | note |');
  for (const row of rows) t.comment(row);

  // A lost delivery, traced: where its event is in the topics it passes through, and where the
  // router's group has committed, so a failing run says which step dropped it.
  const lostIds = [
    ...new Set(
      expected.filter((e) => !done.has(`${e.id} ${e.destination.id}`) || !received.has(`${e.id} ${e.destination.path}`)).map((e) => e.id),
    ),
  ];
  if (lostIds.length) {
    const where = await trace(admin, prefix, lostIds.slice(0, 50));
    const committed = await admin.fetchOffsets({ groupId: `${prefix}router`, topics: [eventsTopic] });
    t.comment(`router committed on ${eventsTopic}: ${JSON.stringify(committed[0]?.partitions.map((p) => `${p.partition}@${p.offset}`))}`);
    for (const id of lostIds.slice(0, 50))
      t.comment(`lost ${id} (published ${publishStart.get(id)}): ${where.get(id)?.join('; ') || 'in no topic'}`);
  }
});

/**
 * The records of this run's events, routed, delivery, retry and attempts topics that carry each of
 * `ids` (as `"id"` in their JSON), as `topic partition@offset`. Reads every partition to its end.
 */
async function trace(admin: Admin, prefix: string, ids: string[]): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>(ids.map((id) => [id, []]));
  const topics = ['events', 'routed', 'deliveries.webhook', 'retry.1s', 'attempts'].map((name) => `${prefix}${name}`);
  const ends = new Map<string, number>();
  for (const topic of topics) for (const p of await admin.fetchTopicOffsets(topic)) ends.set(`${topic} ${p.partition}`, Number(p.high));
  const left = new Set([...ends].filter(([, high]) => high > 0).map(([id]) => id));
  const kafka = new kafkajs.Kafka({ clientId: 'cluster-trace', brokers: brokers.split(','), logLevel: kafkajs.logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: uniqueName('cluster-trace') });
  await consumer.connect();
  try {
    for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        const text = message.value?.toString() ?? '';
        for (const id of ids)
          if (text.includes(`"${id}"`)) found.get(id)?.push(`${topic.slice(prefix.length)} ${partition}@${message.offset}`);
        if (Number(message.offset) + 1 >= (ends.get(`${topic} ${partition}`) ?? 0)) left.delete(`${topic} ${partition}`);
      },
    });
    await waitFor('every traced partition read to its end', () => left.size === 0, 180_000).catch(() => undefined);
  } finally {
    await consumer.disconnect();
  }
  return found;
}
