import { checkedInstant } from '@switchyard/shared/time.ts';
import type { FastifyInstance } from 'fastify';
import { AppError, errorBody, type Problem } from '@switchyard/shared/errors.ts';
import { MAX_JSON_DEPTH, unstorable } from '@switchyard/shared/events/storable.ts';
import { newId } from '@switchyard/shared/ids.ts';
import type { EventRecord, JsonObject } from '@switchyard/shared/model/index.ts';
import { matchesTopic } from '@switchyard/shared/routing/match.ts';
import type { PublishResult } from '../publisher.ts';
import { ajvProblems, toAppError } from '../errors.ts';
import { jsonAjv } from '../validators.ts';
import { idParam } from './common.ts';
import { answers, ref } from '../openapi.ts';
import { deliverAtOf, scheduleProperties } from '../schedule.ts';

/** Most events one batch publish may carry. */
export const PUBLISH_BATCH_MAX = 1000;
export const PUBLISH_BATCH_BODY_LIMIT = 16 * 1024 * 1024;
/**
 * Every body but a batch publish's, and each event of a batch as JSON: so every event is at most
 * 1 MiB however it came, leaving room for a destination beside it in a delivery record of
 * KAFKA_MAX_MESSAGE_BYTES (at least 2 MiB; the router dead-letters an event whose records would not fit).
 */
export const BODY_LIMIT_BYTES = 1024 * 1024;

export const publishBodySchema = {
  type: 'object',
  required: ['tenant_id', 'topic', 'data'],
  additionalProperties: false,
  properties: {
    id: idParam,
    tenant_id: idParam,
    topic: { type: 'string', minLength: 1, maxLength: 255 },
    destination_id: idParam,
    eligible_for_retry: { type: 'boolean', default: true },
    time: { type: 'string', format: 'date-time' },
    metadata: { type: ['object', 'null'], additionalProperties: { type: ['string', 'number', 'boolean'] } },
    data: { type: 'object', additionalProperties: true },
    ...scheduleProperties,
  },
} as const;

export const publishBatchBodySchema = {
  type: 'object',
  required: ['events'],
  additionalProperties: false,
  properties: {
    events: {
      type: 'array',
      minItems: 1,
      maxItems: PUBLISH_BATCH_MAX,
      description: 'Each item is a PublishRequest, validated on its own: a bad item fails alone.',
      items: { type: 'object', additionalProperties: true },
    },
  },
} as const;

interface PublishBody {
  id?: string;
  tenant_id: string;
  topic: string;
  destination_id?: string;
  eligible_for_retry: boolean;
  time?: string;
  metadata?: Record<string, string | number | boolean> | null;
  data: JsonObject;
  deliver_at?: string;
  delay_seconds?: number;
}

// Items of a batch are validated one by one, so one bad event does not sink the others; as sent,
// as a single publish's body is.
const validateItem = jsonAjv().compile(publishBodySchema);

export interface PublishRouteDeps {
  /** TOPICS: what a published event's topic must match. */
  topics: readonly string[];
  /** Publishes one event (publisher.ts); `callerId`: the id came with the request. */
  publish: (event: EventRecord, callerId: boolean) => Promise<PublishResult>;
}

/**
 * A publish's answer: a scheduled event's carries when its deliveries are due. A repeat (`duplicate`)
 * publishes nothing, so it carries none: the time this request asked for is not the event's.
 */
function scheduledAnswer(published: PublishResult, deliverAt: string | undefined) {
  return deliverAt && !published.duplicate ? { ...published, deliver_at: deliverAt } : published;
}

export function publishRoutes(deps: PublishRouteDeps) {
  const toEvent = (body: PublishBody, deliverAt?: string): EventRecord => ({
    id: body.id ?? newId(),
    tenant_id: body.tenant_id,
    topic: body.topic,
    time: (body.time ? checkedInstant(body.time) : new Date()).toISOString(),
    eligible_for_retry: body.eligible_for_retry ?? true,
    metadata: body.metadata ?? null,
    data: body.data,
    destination_id: body.destination_id ?? null,
    ...(deliverAt ? { deliver_at: deliverAt } : {}),
  });
  const checkTopic = (topic: string, path: string): Problem[] => {
    const allowed = deps.topics;
    // A published topic is concrete: it must match TOPICS and hold no wildcard itself.
    return !topic.includes('*') && matchesTopic(allowed, topic) ? [] : [{ path, message: `"${topic}" is not a configured topic` }];
  };

  return async (app: FastifyInstance) => {
    app.post<{ Body: PublishBody }>(
      '/publish',
      {
        config: { adminOnly: true },
        schema: {
          tags: ['publish'],
          summary: 'Publish one event; 202 once Kafka acknowledged it',
          body: ref('PublishRequest'),
          response: answers({ 202: 'PublishResult' }, [409, 429]),
        },
      },
      async (req, reply) => {
        const schedule = deliverAtOf(req.body, 'body');
        const problems = [...checkTopic(req.body.topic, 'body.topic'), ...schedule.problems];
        if (problems.length) throw AppError.validation(problems);
        const published = await deps.publish(toEvent(req.body, schedule.deliver_at), req.body.id !== undefined);
        reply.status(202);
        return scheduledAnswer(published, schedule.deliver_at);
      },
    );

    app.post<{ Body: { events: unknown[] } }>(
      '/publish/batch',
      {
        bodyLimit: PUBLISH_BATCH_BODY_LIMIT,
        // One bad event of a batch must not sink the others: each item is checked on its own.
        config: { ownBodyChecks: true, adminOnly: true },
        schema: {
          tags: ['publish'],
          summary: `Publish up to ${PUBLISH_BATCH_MAX} events; each is validated and answered on its own`,
          body: ref('PublishBatchRequest'),
          response: answers({ 200: 'BatchPublishResult' }, [429]),
        },
      },
      async (req) => {
        // A body within the limit cannot hold an event over it: only a larger one is measured.
        const mayHoldLarge = !(Number(req.headers['content-length']) <= BODY_LIMIT_BYTES);
        const results = await Promise.all(
          req.body.events.map(async (item, i) => {
            try {
              // Before the schema: nothing unstorable is ever an event (and ajv recurses).
              const deep = unstorable(item, `body.events[${i}]`, MAX_JSON_DEPTH);
              if (deep) throw AppError.validation([deep]);
              const bytes = mayHoldLarge ? Buffer.byteLength(JSON.stringify(item)) : 0;
              if (bytes > BODY_LIMIT_BYTES)
                throw new AppError(
                  'PAYLOAD_TOO_LARGE',
                  `body.events[${i}] is ${bytes} bytes of JSON; an event is at most 1 MiB (1048576 bytes).`,
                );
              if (!validateItem(item)) throw AppError.validation(ajvProblems(validateItem.errors ?? [], `body.events[${i}]`));
              const body = item as PublishBody;
              const schedule = deliverAtOf(body, `body.events[${i}]`);
              const problems = [...checkTopic(body.topic, `body.events[${i}].topic`), ...schedule.problems];
              if (problems.length) throw AppError.validation(problems);
              const published = await deps.publish(toEvent(body, schedule.deliver_at), body.id !== undefined);
              return { status: 202, ...scheduledAnswer(published, schedule.deliver_at) };
            } catch (err) {
              const e = toAppError(err as Error);
              if (e.code === 'INTERNAL') req.log.error({ err }, 'batch publish item failed');
              return errorBody(e);
            }
          }),
        );
        return { results };
      },
    );
  };
}
