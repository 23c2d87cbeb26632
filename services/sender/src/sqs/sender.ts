/**
 * sqs delivery (../shared/spec/contract-details.md, "How each type delivers"): the body is the event
 * data as JSON text; the metadata map travels as one String message attribute `metadata` holding it
 * as JSON. A FIFO queue (`.fifo`) gets the event id as deduplication id and the destination id as
 * message group, per message, so a retry is not delivered twice within SQS's five-minute window
 * (an id over SQS's 128 characters as its SHA-256 in hex). A message refused for its size fails
 * as rejected, alone or in a batch.
 *
 * A destination's deliveries are coalesced into SendMessageBatch requests (batch.ts): up to 10
 * messages and 256 KiB a request. A batch goes once full, else after SQS_BATCH_WAIT_MS if none of the
 * destination's requests is out, or when the one out answers: under load the next batch fills while a
 * request is out. Every message keeps its own outcome: a batch whose answer lists one entry as failed
 * fails that delivery alone, and the others succeed; a request that fails as a whole (throttled,
 * refused credentials, the network) fails each of its deliveries as a single request would have,
 * except one refused for what it carries, sent again a message a request (`refusedAlone`).
 */
import { createHash } from 'node:crypto';
import { type SendMessageBatchRequestEntry, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { regionOfQueueUrl } from '@switchyard/shared/destinations/types/sqs.ts';
import { awsClientConfig, awsEntryFailure, awsFailure, egressRefusal } from '../aws.ts';
import { createCoalescer, refusedAlone } from '../batch.ts';
import type { AllowList } from '../egress.ts';
import { bodyOf, metadataOf } from '../metadata.ts';
import { failed, type Outcome, succeeded, type TypeSender } from '../sender.ts';

/** SendMessageBatch's limits: 10 entries, 256 KiB of bodies and attributes together. */
export const SQS_BATCH = { maxEntries: 10, maxBytes: 256 * 1024 } as const;
/** Longest a message waits for others to share its request while none of the destination's is out. */
export const SQS_BATCH_WAIT_MS = 3;

type Entry = Omit<SendMessageBatchRequestEntry, 'Id'>;

/** SQS takes FIFO group and deduplication ids of at most 128 characters; a longer id is hashed (stable across retries). */
const fifoId = (id: string) => (id.length > 128 ? createHash('sha256').update(id).digest('hex') : id);

/** SQS's refusal of one message over the queue's MaximumMessageSize ("Message must be shorter than N bytes"). */
const TOO_LARGE = /must be shorter than \d+ bytes|MaximumMessageSize/i;

export function createSqsSender(opts: { allow: AllowList; batchWaitMs?: number }): TypeSender {
  return {
    open(target) {
      const queueUrl = String(target.config.queue_url ?? '');
      const cfg = awsClientConfig(target, opts.allow, regionOfQueueUrl(queueUrl));
      // Without an endpoint the SDK sends to the queue URL's host: check that one too.
      const refused = egressRefusal(cfg.endpoint, opts.allow) ?? egressRefusal(queueUrl, opts.allow);
      // No MD5 of every body and attribute computed again to compare with the answer's: the
      // connection (TLS) guards the bytes, and the hashing was a good part of the sender's CPU.
      const client = new SQSClient({ ...cfg, md5: false });
      const fifo = queueUrl.endsWith('.fifo');
      const batches = createCoalescer<Entry>(
        { ...SQS_BATCH, waitMs: opts.batchWaitMs ?? SQS_BATCH_WAIT_MS },
        refusedAlone(async (entries, signal): Promise<Outcome[]> => {
          try {
            const out = await client.send(
              new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries.map((e, i) => ({ Id: String(i), ...e })) }),
              { abortSignal: signal },
            );
            const outcomes: Array<Outcome | undefined> = new Array(entries.length);
            for (const s of out.Successful ?? []) outcomes[Number(s.Id)] = succeeded({ message_id: s.MessageId ?? null });
            for (const f of out.Failed ?? []) outcomes[Number(f.Id)] = awsEntryFailure(f.Code, f.Message, f.SenderFault ?? false);
            return entries.map(
              (_, i) => outcomes[i] ?? awsEntryFailure('InternalFailure', 'the answer did not mention this message', false),
            );
          } catch (err) {
            const outcome = awsFailure(err, signal);
            // One message refused for its size is that event's refusal, not a queue that can never work.
            if (
              entries.length === 1 &&
              outcome.response_data?.reason === 'invalid_config' &&
              TOO_LARGE.test(String(outcome.response_data.message))
            ) {
              return [
                failed('rejected', String(outcome.response_data.message), {
                  ...outcome.response_data,
                  reason: 'rejected',
                  batch_entry: true,
                }),
              ];
            }
            return entries.map(() => outcome);
          }
        }),
      );
      return {
        async deliver({ event, deliveryMetadata, signal }) {
          if (refused) return refused;
          const body = bodyOf(event);
          const metadata = JSON.stringify(metadataOf(event, deliveryMetadata));
          const entry: Entry = {
            MessageBody: body,
            MessageAttributes: { metadata: { DataType: 'String', StringValue: metadata } },
            ...(fifo ? { MessageGroupId: fifoId(target.id), MessageDeduplicationId: fifoId(event.id) } : {}),
          };
          // SQS counts the body and each attribute's name, type and value.
          const bytes = Buffer.byteLength(body, 'utf8') + Buffer.byteLength(metadata, 'utf8') + 'metadata'.length + 'String'.length;
          return batches.add(entry, bytes, signal);
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
