/**
 * kinesis delivery (../shared/spec/contract-details.md, "How each type delivers"): the record is
 * `{"metadata": {...}, "data": <event data>}` (JSON text), or the event data alone when
 * KINESIS_METADATA_IN_PAYLOAD is false (Kinesis records carry no attributes, so the metadata is then
 * not sent). The partition key is `partition_key_template`, a JMESPath expression over
 * `{data, metadata}`, or the event id.
 *
 * A destination's deliveries are coalesced into PutRecords requests to `stream_name` (batch.ts): up
 * to 500 records and 5 MiB (data and partition keys) a request. A batch goes once full, else after
 * KINESIS_BATCH_WAIT_MS if none of the destination's requests is out, or when the one out answers:
 * under load the next batch fills while a request is out. Every record keeps its own
 * outcome: a record the answer refuses (ProvisionedThroughputExceededException, InternalFailure)
 * fails that delivery alone, retried as any failed attempt; the others succeed. A request refused
 * as a whole for what it carries goes again a record a request (`refusedAlone`).
 *
 * Order: within one request Kinesis writes the records of a shard in the request's order, so
 * deliveries of one partition key that share a request keep the order they reached the client in.
 * Nothing orders requests in flight together (a full batch goes whatever is out, and a batch waits
 * for the one out at most batch.ts's `slotWaitMs`), and a refused record comes back through the
 * retry tiers behind the records that succeeded.
 */
import { KinesisClient, PutRecordsCommand, type PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import { awsClientConfig, awsEntryFailure, awsFailure, egressRefusal } from '../aws.ts';
import { createCoalescer, refusedAlone } from '../batch.ts';
import type { AllowList } from '../egress.ts';
import { bodyOf, metadataOf } from '../metadata.ts';
import { failed, type Outcome, succeeded, type TypeSender } from '../sender.ts';
import { compileTemplate, isOutcome } from '../template.ts';

/** PutRecords's limits: 500 records, 5 MiB of data and partition keys together, 1 MiB a record. */
export const KINESIS_BATCH = { maxEntries: 500, maxBytes: 5 * 1024 * 1024, maxEntryBytes: 1024 * 1024 } as const;
/** Longest a record waits for others to share its request while none of the destination's is out. */
export const KINESIS_BATCH_WAIT_MS = 3;

/** What Kinesis counts of a record against its limits: the data and the partition key. */
const sizeOf = (r: PutRecordsRequestEntry) => (r.Data?.length ?? 0) + Buffer.byteLength(r.PartitionKey ?? '', 'utf8');

export interface KinesisSenderOptions {
  allow: AllowList;
  /** Send `{metadata, data}` (true) or the data alone. */
  metadataInPayload: boolean;
  batchWaitMs?: number;
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
      const batches = createCoalescer<PutRecordsRequestEntry>(
        { ...KINESIS_BATCH, waitMs: opts.batchWaitMs ?? KINESIS_BATCH_WAIT_MS },
        refusedAlone(async (records, signal): Promise<Outcome[]> => {
          try {
            const out = await client.send(new PutRecordsCommand({ StreamName: streamName, Records: records }), { abortSignal: signal });
            // One answer per record, in the request's order.
            return records.map((_, i) => {
              const r = out.Records?.[i];
              if (!r) return awsEntryFailure('InternalFailure', 'the answer did not mention this record', false);
              if (r.ErrorCode) return awsEntryFailure(r.ErrorCode, r.ErrorMessage, r.ErrorCode !== 'InternalFailure');
              return succeeded({ shard_id: r.ShardId ?? null, sequence_number: r.SequenceNumber ?? null });
            });
          } catch (err) {
            const outcome = awsFailure(err, signal);
            // A record past a record's limit goes alone, and Kinesis refuses its request as malformed:
            // that is this event's refusal, not a stream that can never work.
            const lone = records.length === 1 ? records[0] : undefined;
            if (lone && outcome.response_data?.reason === 'invalid_config' && sizeOf(lone) > KINESIS_BATCH.maxEntryBytes) {
              return [failed('rejected', String(outcome.response_data.message), { ...outcome.response_data, reason: 'rejected' })];
            }
            return records.map(() => outcome);
          }
        }),
      );
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
          const entry = { PartitionKey: key, Data: Buffer.from(record, 'utf8') };
          return batches.add(entry, sizeOf(entry), signal);
        },
        async close() {
          await batches.drain();
          client.destroy();
        },
      };
    },
    async close() {},
  };
}
