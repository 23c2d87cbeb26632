// Conformance fixture: kinesis, run twice: against kinesalite (the Kinesis protocol, from npm) and
// against moto (PyPI), each behind the AWS gate, which checks each request's signature (neither peer
// checks one), throttles and fails batch records on request.
import { CreateStreamCommand, GetRecordsCommand, GetShardIteratorCommand, KinesisClient, ListShardsCommand } from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { startAwsGate } from '@switchyard/shared/testing/peers/aws-gate.ts';
import type { Teardown } from '@switchyard/shared/testing/index.ts';
import { startKinesalite } from '@switchyard/shared/testing/peers/kinesalite.ts';
import { startMoto } from '@switchyard/shared/testing/peers/moto.ts';
import { parseAllowList } from '../../src/egress.ts';
import { createKinesisSender } from '../../src/kinesis/sender.ts';
import type { Target } from '../../src/sender.ts';
import { conformance, DELIVERY_METADATA, type Received, sampleEvent } from './suite.ts';

const ADMIN = { accessKeyId: 'AKIDADMIN', secretAccessKey: 'admin-secret' };
const allow = parseAllowList(['127.0.0.0/8']);

const PEERS: Array<{ name: string; start(t: Teardown): Promise<{ port: number }> }> = [
  { name: 'kinesalite', start: startKinesalite },
  { name: 'moto', start: (t) => startMoto(t) },
];

for (const upstream of PEERS) kinesisConformance(upstream);

function kinesisConformance(upstream: (typeof PEERS)[number]): void {
  let read: (target: Target) => Promise<Received[]>;
  let gate: Awaited<ReturnType<typeof startAwsGate>>;
  conformance({
    type: 'kinesis',
    peer: upstream.name,
    async start(t) {
      const k = await upstream.start(t);
      gate = await startAwsGate(t, {
        upstream: { host: '127.0.0.1', port: k.port },
        protocol: 'json',
        throttleCode: 'ProvisionedThroughputExceededException',
      });
      gate.keys.set(ADMIN.accessKeyId, ADMIN.secretAccessKey);
      const admin = new KinesisClient({
        endpoint: gate.url,
        region: 'us-east-1',
        credentials: ADMIN,
        requestHandler: new NodeHttpHandler(),
      });
      t.teardown(() => admin.destroy());
      let n = 0;
      const newKey = () => {
        const key = `AKIDKIN${++n}`;
        const secret = `kinesis-secret-${n}-${Date.now()}`;
        gate.keys.set(key, secret);
        return { key, secret };
      };
      read = async (target) => {
        const StreamName = String(target.config.stream_name);
        const shards = await admin.send(new ListShardsCommand({ StreamName }));
        const out: Received[] = [];
        for (const shard of shards.Shards ?? []) {
          const it = await admin.send(
            new GetShardIteratorCommand({ StreamName, ShardId: shard.ShardId, ShardIteratorType: 'TRIM_HORIZON' }),
          );
          const r = await admin.send(new GetRecordsCommand({ ShardIterator: it.ShardIterator, Limit: 1000 }));
          for (const rec of r.Records ?? []) {
            const raw = Buffer.from(rec.Data ?? new Uint8Array()).toString('utf8');
            const parsed = JSON.parse(raw) as { metadata?: Record<string, string>; data?: unknown };
            out.push({
              body: 'metadata' in parsed ? JSON.stringify(parsed.data) : raw,
              metadata: parsed.metadata ?? {},
              extra: { raw, partitionKey: rec.PartitionKey, arrival: rec.ApproximateArrivalTimestamp?.getTime() ?? 0 },
            });
          }
        }
        return out.sort((a, b) => (a.extra?.arrival as number) - (b.extra?.arrival as number));
      };
      return {
        sender: createKinesisSender({ allow, metadataInPayload: true }),
        async destination() {
          const name = `conf-${Date.now().toString(36)}-${++n}`;
          await admin.send(new CreateStreamCommand({ StreamName: name, ShardCount: 1 }));
          return {
            id: `des_kin_${n}`,
            tenant_id: 'acme',
            type: 'kinesis',
            config: { stream_name: name, region: 'us-east-1', endpoint: gate.url },
            credentials: newKey(),
          };
        },
        received: (target) => read(target),
        connections: () => gate.connections,
        pointAt: (target, host, port) => ({ ...target, config: { ...target.config, endpoint: `http://${host}:${port}` } }),
        async rotate(target) {
          gate.keys.delete(String(target.credentials.key));
          return { ...target, credentials: newKey() };
        },
        failures: {
          unauthorized: async (good) => ({ target: { ...good, credentials: { ...good.credentials, secret: 'not-the-secret' } } }),
          not_found: async (good) => ({ target: { ...good, config: { ...good.config, stream_name: 'no-such-stream' } } }),
          throttled: async (good) => {
            gate.throttle(String(good.credentials.key), 1, 4);
            return { target: good, expect: { minRetryAfterMs: 4000 } };
          },
          invalid_config: async (good) => ({ target: { ...good, config: { ...good.config, partition_key_template: 'join((' } } }),
        },
        checkReceived(t, r, event) {
          t.equal(
            r.extra?.raw,
            `{"metadata":${JSON.stringify(r.metadata)},"data":${JSON.stringify(event.data)}}`,
            'the record is {metadata, data}',
          );
          t.equal(r.extra?.partitionKey, event.id, 'the partition key defaults to the event id');
        },
      };
    },
    batch: () => ({
      maxEntries: 500,
      requests: (target) => gate.seenBy.get(String(target.credentials.key)) ?? 0,
      failEntries(marker) {
        gate.failEntries(marker, {
          code: 'ProvisionedThroughputExceededException',
          message: 'Rate exceeded for shard shardId-000000000000',
        });
        return 'throttled';
      },
      refuseRequests: (marker, times) =>
        gate.refuseRequests(marker, { code: 'InvalidArgumentException', message: 'One or more parameters are invalid.', times }),
      hangUp: (target) => gate.hangUp(String(target.credentials.key)),
      throttle: (target) => gate.throttle(String(target.credentials.key), 1, 2),
      // Past a record's 1 MiB.
      oversize: () => 'x'.repeat(1100 * 1024),
      senderWithWait: (waitMs) => createKinesisSender({ allow, metadataInPayload: true, batchWaitMs: waitMs }),
    }),
    cases: {
      'partition_key_template is JMESPath over {data, metadata}': async (t, peer, deliver) => {
        const base = await peer.destination();
        const target = { ...base, config: { ...base.config, partition_key_template: "join('-', [metadata.source, data.name])" } };
        const event = sampleEvent();
        t.match(await deliver(target, event), { status: 'success' });
        const [r] = await peer.received(target);
        t.equal(r?.extra?.partitionKey, 'crm-Zoë');
        const nothing = { ...base, id: `${base.id}_null`, config: { ...base.config, partition_key_template: 'data.missing' } };
        t.match(
          await deliver(nothing, sampleEvent()),
          { status: 'failed', retryable: true, response_data: { reason: 'rejected' } },
          'a template that gives nothing for an event refuses that event',
        );
      },
      'KINESIS_METADATA_IN_PAYLOAD=false sends the data alone': async (t, peer) => {
        const target = await peer.destination();
        const client = createKinesisSender({ allow, metadataInPayload: false }).open(target);
        const event = sampleEvent();
        t.match(await client.deliver({ event, deliveryMetadata: DELIVERY_METADATA, signal: AbortSignal.timeout(5000) }), {
          status: 'success',
        });
        await client.close();
        const [r] = await read(target);
        t.equal(r?.extra?.raw, JSON.stringify(event.data), 'the record is the event data');
      },
    },
  });
}
