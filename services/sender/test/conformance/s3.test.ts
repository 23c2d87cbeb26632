// Conformance fixture: s3, against the S3 peer (infra/s3: gofakes3, the S3 REST protocol, in its own
// process) behind the AWS gate, which checks each request's signature against its key table and
// throttles on request (the peer checks no signature).
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { startAwsGate } from '@switchyard/shared/testing/peers/aws-gate.ts';
import { startS3Peer } from '@switchyard/shared/testing/peers/s3.ts';
import { createEgressAgent, parseAllowList } from '../../src/egress.ts';
import { createS3Sender } from '../../src/s3/sender.ts';
import type { Target } from '../../src/sender.ts';
import { rfc3339Nano } from '../../src/template.ts';
import { conformance, type Received, sampleEvent } from './suite.ts';

const ADMIN = { accessKeyId: 'AKIDADMIN', secretAccessKey: 'admin-secret' };
const allow = parseAllowList(['127.0.0.0/8']);

conformance({
  type: 's3',
  async start(t) {
    const s3 = await startS3Peer(t);
    const gate = await startAwsGate(t, {
      upstream: { host: '127.0.0.1', port: s3.port },
      protocol: 's3',
      throttleCode: 'SlowDown',
      throttleStatus: 503,
    });
    gate.keys.set(ADMIN.accessKeyId, ADMIN.secretAccessKey);
    // The egress-checked agent the service shares between the HTTP types and s3.
    const dispatcher = createEgressAgent({ allow, connectTimeoutMs: 5_000 });
    t.teardown(() => dispatcher.close());
    const admin = new S3Client({ endpoint: gate.url, region: 'us-east-1', credentials: ADMIN, forcePathStyle: true });
    t.teardown(() => admin.destroy());
    let n = 0;
    const newKey = () => {
      const key = `AKIDS3${++n}`;
      const secret = `s3-secret-${n}-${Date.now()}`;
      gate.keys.set(key, secret);
      return { key, secret };
    };
    return {
      sender: createS3Sender({ allow, dispatcher }),
      async destination(): Promise<Target> {
        const bucket = `conf-${Date.now().toString(36)}-${++n}`;
        await admin.send(new CreateBucketCommand({ Bucket: bucket }));
        return {
          id: `des_s3_${n}`,
          tenant_id: 'acme',
          type: 's3',
          config: { bucket, region: 'us-east-1', endpoint: gate.url },
          credentials: newKey(),
        };
      },
      async received(target) {
        const Bucket = String(target.config.bucket);
        const list = await admin.send(new ListObjectsV2Command({ Bucket }));
        const out: Received[] = [];
        for (const o of list.Contents ?? []) {
          const obj = await admin.send(new GetObjectCommand({ Bucket, Key: o.Key }));
          const head = await admin.send(new HeadObjectCommand({ Bucket, Key: o.Key }));
          out.push({
            body: (await obj.Body?.transformToString('utf8')) ?? '',
            metadata: head.Metadata ?? {},
            extra: {
              key: o.Key,
              contentType: head.ContentType,
              storageClass: head.StorageClass ?? 'STANDARD',
              modified: o.LastModified?.getTime() ?? 0,
            },
          });
        }
        return out.sort((a, b) => (a.extra?.modified as number) - (b.extra?.modified as number));
      },
      connections: () => gate.connections,
      pointAt: (target, host, port) => ({ ...target, config: { ...target.config, endpoint: `http://${host}:${port}` } }),
      async rotate(target) {
        gate.keys.delete(String(target.credentials.key));
        return { ...target, credentials: newKey() };
      },
      failures: {
        unauthorized: async (good) => ({
          target: { ...good, credentials: { ...good.credentials, secret: 'not-the-secret' } },
          expect: { code: 'ERR' },
        }),
        not_found: async (good) => ({ target: { ...good, config: { ...good.config, bucket: 'no-such-bucket' } } }),
        throttled: async (good) => {
          gate.throttle(String(good.credentials.key), 1, 5);
          return { target: good, expect: { minRetryAfterMs: 5000 } };
        },
        invalid_config: async (good) => ({ target: { ...good, config: { ...good.config, key_template: "join('', [" } } }),
      },
      checkReceived(t, r, event) {
        t.equal(r.extra?.key, `${rfc3339Nano(event.time)}_${event.id}.json`, 'the default key: <time rfc3339 nano>_<event id>.json');
        t.equal(r.extra?.contentType, 'application/json');
        t.equal(r.extra?.storageClass, 'STANDARD', 'the default storage class');
      },
    };
  },
  cases: {
    'key_template and storage_class': async (t, peer, deliver) => {
      const base = await peer.destination();
      const target = {
        ...base,
        config: {
          ...base.config,
          key_template: "join('/', [metadata.topic, data.name, to_string(time.unix)])",
          storage_class: 'STANDARD_IA',
        },
      };
      const event = sampleEvent();
      const out = await deliver(target, event);
      const key = `from-event-metadata/Zoë/${Math.floor(Date.parse(event.time) / 1000)}`;
      t.match(out, { status: 'success', response_data: { key } }, 'the key is kept in the attempt');
      const [r] = await peer.received(target);
      t.equal(r?.extra?.key, key, 'JMESPath over {data, metadata, time}');
      t.equal(r?.extra?.storageClass, 'STANDARD_IA');
    },
    'a key with "." or ".." segments is rejected, and keys with dots elsewhere go through': async (t, peer, deliver) => {
      const base = await peer.destination();
      const keyed = (key_template: string) => ({ ...base, config: { ...base.config, key_template } });
      for (const folder of ['.', '..']) {
        const out = await deliver(keyed("join('/', ['a', data.folder, 'b.json'])"), sampleEvent({ data: { folder } }));
        t.match(out, { status: 'failed', retryable: true, response_data: { reason: 'rejected' } }, JSON.stringify(out.response_data));
      }
      const out = await deliver(keyed("join('/', ['a', data.folder, 'b.json'])"), sampleEvent({ data: { folder: '...x' } }));
      t.match(out, { status: 'success', response_data: { key: 'a/...x/b.json' } }, JSON.stringify(out.response_data));
    },
    'under load, connections are kept alive and shared by the destinations of one endpoint': async (t, peer, deliver) => {
      const connections = peer.connections as () => number;
      const targets = [await peer.destination(), await peer.destination()];
      const start = connections();
      // Ten rounds of 8 deliveries in flight together, alternating between two destinations of one endpoint.
      for (let round = 0; round < 10; round++) {
        const target = targets[round % 2] as (typeof targets)[number];
        const outs = await Promise.all(Array.from({ length: 8 }, () => deliver(target, sampleEvent())));
        t.ok(
          outs.every((o) => o.status === 'success'),
          `round ${round}: 8 deliveries in flight together succeed`,
        );
      }
      const opened = connections() - start;
      t.ok(opened <= 16, `80 requests, at most 8 in flight, over at most 16 connections (${opened})`);
    },
  },
});
