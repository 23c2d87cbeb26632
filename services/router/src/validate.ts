import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { EventRecord } from '@switchyard/shared/model/index.ts';
import { matchesTopic } from '@switchyard/shared/routing/match.ts';
import { unstorable } from '@switchyard/shared/events/storable.ts';
import { checkedInstant, DATE_TIME_FORMAT, isStorableMs } from '@switchyard/shared/time.ts';

const require = createRequire(import.meta.url);
const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true, useDefaults: true });
addFormats.default(ajv);
// The gateway's rule: a time must be an instant a Date and Postgres hold (a leap second is neither).
ajv.addFormat('date-time', DATE_TIME_FORMAT);
ajv.addSchema(require('@switchyard/shared/schemas/event.schema.json'));
const validateEvent = ajv.getSchema('https://switchyard.dev/schemas/event.schema.json');
if (!validateEvent) throw new Error('event schema missing');

export type EventCheck = { ok: true; event: EventRecord } | { ok: false; reason: string };

/**
 * Validates a record of the events topic written by a producer directly (shared/schemas/event.schema.json)
 * and fills in what the gateway would have: an id (stable for this record), a time, eligible_for_retry.
 */
export function checkEvent(
  value: unknown,
  record: { partition: number; offset: string; timestamp: number },
  topics: readonly string[],
): EventCheck {
  // The record timestamp becomes received_at (and the time when the event has none): a producer
  // sets it (the topic keeps CreateTime), and past years 0001-9999 neither a Date nor Postgres holds it.
  if (!isStorableMs(record.timestamp)) return { ok: false, reason: `timestamp: ${record.timestamp} is outside years 0001-9999` };
  // Then: Postgres could never store it (NUL, a lone surrogate, nesting past MAX_JSON_DEPTH).
  const bad = unstorable(value, 'event');
  if (bad) return { ok: false, reason: `unstorable: ${bad.path} ${bad.message}` };
  if (!validateEvent?.(value)) {
    const why = (validateEvent?.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
    return { ok: false, reason: `schema: ${why}` };
  }
  const v = value as Omit<EventRecord, 'id' | 'time' | 'eligible_for_retry'> & Partial<EventRecord>;
  if (v.topic.includes('*') || !matchesTopic(topics, v.topic)) return { ok: false, reason: `unknown topic: ${v.topic}` };
  return {
    ok: true,
    event: {
      ...v,
      id: v.id ?? `kafka-${record.partition}-${record.offset}`,
      // In UTC, as the gateway writes them.
      time: (v.time ? checkedInstant(v.time) : new Date(record.timestamp)).toISOString(),
      ...(v.deliver_at ? { deliver_at: checkedInstant(v.deliver_at).toISOString() } : {}),
      eligible_for_retry: v.eligible_for_retry ?? true,
      metadata: v.metadata ?? null,
      destination_id: v.destination_id ?? null,
      received_at: new Date(record.timestamp).toISOString(),
    },
  };
}
