/**
 * sqs delivery (../shared/spec/contract-details.md, "How each type delivers"): one SendMessage to
 * `queue_url`; the body is the event data as JSON text; the metadata map travels as one String
 * message attribute `metadata` holding it as JSON. A FIFO queue (`.fifo`) gets the event id as
 * deduplication id and the destination id as message group, so a retry is not delivered twice within
 * SQS's five-minute window and the destination's events keep their order.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { awsClientConfig, awsFailure, egressRefusal } from '../aws.ts';
import type { AllowList } from '../egress.ts';
import { bodyOf, metadataOf } from '../metadata.ts';
import { succeeded, type TypeSender } from '../sender.ts';

/** The region in an AWS queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>), if it is one. */
export function regionOfQueueUrl(url: string): string | undefined {
  return /^https?:\/\/sqs[.-]([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?\//.exec(url)?.[1];
}

export function createSqsSender(opts: { allow: AllowList }): TypeSender {
  return {
    open(target) {
      const queueUrl = String(target.config.queue_url ?? '');
      const cfg = awsClientConfig(target, opts.allow, regionOfQueueUrl(queueUrl));
      // Without an endpoint the SDK sends to the queue URL's host: check that one too.
      const refused = egressRefusal(cfg.endpoint, opts.allow) ?? egressRefusal(queueUrl, opts.allow);
      const client = new SQSClient(cfg);
      const fifo = queueUrl.endsWith('.fifo');
      return {
        async deliver({ event, deliveryMetadata, signal }) {
          if (refused) return refused;
          try {
            const out = await client.send(
              new SendMessageCommand({
                QueueUrl: queueUrl,
                MessageBody: bodyOf(event),
                MessageAttributes: {
                  metadata: { DataType: 'String', StringValue: JSON.stringify(metadataOf(event, deliveryMetadata)) },
                },
                ...(fifo ? { MessageGroupId: target.id, MessageDeduplicationId: event.id } : {}),
              }),
              { abortSignal: signal },
            );
            return succeeded({ message_id: out.MessageId ?? null });
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
