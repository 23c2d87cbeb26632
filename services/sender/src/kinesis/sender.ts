/**
 * kinesis delivery (../shared/spec/contract-details.md, "How each type delivers"): one PutRecord to
 * `stream_name`. The record is `{"metadata": {...}, "data": <event data>}` (JSON text), or the event
 * data alone when KINESIS_METADATA_IN_PAYLOAD is false (Kinesis records carry no attributes, so the
 * metadata is then not sent). The partition key is `partition_key_template`, a JMESPath expression
 * over `{data, metadata}`, or the event id.
 */
import { KinesisClient, PutRecordCommand } from '@aws-sdk/client-kinesis';
import { awsClientConfig, awsFailure, egressRefusal } from '../aws.ts';
import type { AllowList } from '../egress.ts';
import { bodyOf, metadataOf } from '../metadata.ts';
import { succeeded, type TypeSender } from '../sender.ts';
import { compileTemplate, isOutcome } from '../template.ts';

export interface KinesisSenderOptions {
  allow: AllowList;
  /** Send `{metadata, data}` (true) or the data alone. */
  metadataInPayload: boolean;
}

export function createKinesisSender(opts: KinesisSenderOptions): TypeSender {
  return {
    open(target) {
      const cfg = awsClientConfig(target, opts.allow);
      const template = typeof target.config.partition_key_template === 'string' ? target.config.partition_key_template.trim() : '';
      const partitionKey = template ? compileTemplate('partition_key_template', template) : null;
      const refused = egressRefusal(cfg.endpoint, opts.allow) ?? (isOutcome(partitionKey) ? partitionKey : null);
      const client = new KinesisClient(cfg);
      const streamName = String(target.config.stream_name ?? '');
      return {
        async deliver({ event, deliveryMetadata, signal }) {
          if (refused) return refused;
          const metadata = metadataOf(event, deliveryMetadata);
          let key = event.id;
          if (partitionKey && !isOutcome(partitionKey)) {
            const k = partitionKey({ data: event.data, metadata });
            if (isOutcome(k)) return k;
            // Kinesis takes at most 256 characters; the key only picks a shard (by its MD5).
            key = k.length > 256 ? k.slice(0, 256) : k;
          }
          const record = opts.metadataInPayload ? `{"metadata":${JSON.stringify(metadata)},"data":${bodyOf(event)}}` : bodyOf(event);
          try {
            const out = await client.send(
              new PutRecordCommand({ StreamName: streamName, PartitionKey: key, Data: Buffer.from(record, 'utf8') }),
              { abortSignal: signal },
            );
            return succeeded({ shard_id: out.ShardId ?? null, sequence_number: out.SequenceNumber ?? null });
          } catch (err) {
            return awsFailure(err, signal);
          }
        },
        async close() {
          client.destroy();
        },
      };
    },
    async close() {},
  };
}
