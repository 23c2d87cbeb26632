// Sender process: consumes the delivery topics of SENDER_TYPES, delivers, and writes each attempt.
import { DestinationStore } from '@switchyard/shared/db/stores/destinations.ts';
import { TOPIC } from '@switchyard/shared/kafka/topics.ts';
import type { DeliveryRecord, DestinationType } from '@switchyard/shared/model/index.ts';
import { isDestinationType } from '@switchyard/shared/destinations/registry.ts';
import { onShutdown } from '@switchyard/shared/process.ts';
import { createRuntime } from '@switchyard/shared/runtime.ts';
import { createDeliveryHandler } from './handler.ts';
import type { Sender } from './sender.ts';
import { createEgressAgent, parseAllowList } from './webhook/egress.ts';
import { createWebhookSender } from './webhook/sender.ts';

const rt = await createRuntime('sender');
const { config, logger } = rt;
const types = config.SENDER_TYPES.filter(isDestinationType);
const unknown = config.SENDER_TYPES.filter((t) => !isDestinationType(t));
if (unknown.length) throw new Error(`SENDER_TYPES names unknown types: ${unknown.join(', ')}`);

const agent = createEgressAgent({ allow: parseAllowList(config.EGRESS_ALLOW) });
const available: Partial<Record<DestinationType, () => Sender>> = {
  webhook: () =>
    createWebhookSender({
      dispatcher: agent,
      mode: config.WEBHOOK_SIGNATURE_MODE as 'standard' | 'compatible',
      headerPrefix: config.WEBHOOK_HEADER_PREFIX,
      responseMaxBytes: config.WEBHOOK_RESPONSE_MAX_BYTES,
    }),
};
const senders: Partial<Record<DestinationType, Sender>> = {};
for (const t of types) {
  const make = available[t];
  if (!make) throw new Error(`delivery for type ${t} is not implemented yet`);
  senders[t] = make();
}

const store = new DestinationStore(rt.db, rt.cipher);
const producer = await rt.bus.producer();
const handle = createDeliveryHandler({
  senders,
  open: (s) => store.openSnapshot(s),
  emitAttempt: (a) => producer.send(TOPIC.attempts, [{ key: a.destination_id, value: a }]),
  timeoutMs: config.DELIVERY_TIMEOUT_SECONDS * 1000,
});

for (const type of types) {
  await rt.bus.consume<DeliveryRecord>({
    groupId: `sender-${type}`,
    topics: [TOPIC.deliveries[type]],
    async handle(record) {
      const { attempt, outcome } = await handle(record.value);
      logger.info(
        {
          attempt_id: attempt.id,
          event_id: attempt.event_id,
          tenant_id: attempt.tenant_id,
          destination_id: attempt.destination_id,
          type,
          attempt_number: attempt.attempt_number,
          status: attempt.status,
          code: attempt.code,
          reason: outcome.response_data?.reason,
          duration_ms: attempt.duration_ms,
        },
        'attempt',
      );
    },
  });
}
logger.info({ types }, 'sender consuming');
onShutdown(logger, async () => {
  await rt.close();
  await Promise.all(Object.values(senders).map((s) => s.close()));
  await agent.close();
});
