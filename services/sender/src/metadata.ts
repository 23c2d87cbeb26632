/**
 * The metadata every type sends with an event (../shared/spec/contract-details.md, "How each type
 * delivers"): one flat string map of the system fields `event-id`, `topic`, `timestamp` (unix
 * seconds), then the destination's delivery_metadata, then the event's metadata; later wins. Values
 * that are not strings are sent as their JSON text (numbers and booleans as written); null is left out.
 * The webhook sender builds its headers from the same three sources itself (webhook/request.ts).
 */
import type { EventRecord } from '@switchyard/shared/model/index.ts';

export function metadataText(v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v);
}

export function metadataOf(event: EventRecord, deliveryMetadata: Readonly<Record<string, string>> | null): Record<string, string> {
  const out: Record<string, string> = { 'event-id': event.id, topic: event.topic };
  const time = Date.parse(event.time);
  if (!Number.isNaN(time)) out.timestamp = String(Math.floor(time / 1000));
  for (const source of [deliveryMetadata, event.metadata]) {
    if (!source) continue;
    for (const [k, v] of Object.entries(source)) {
      const text = metadataText(v);
      if (text !== undefined && k !== '') out[k] = text;
    }
  }
  return out;
}

/** The body every type sends: the event's data as JSON text, exactly as published. */
export const bodyOf = (event: EventRecord): string => JSON.stringify(event.data) ?? 'null';
