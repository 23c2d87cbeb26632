/**
 * Delivery controls common to every destination type, beside its config and credentials: declared
 * once here as JSON Schema, which validates create and PATCH bodies (the gateway), documents them
 * (OpenAPI) and is served with each type's schema by /destination-types (the portal's settings).
 *
 * `rate_limit`: the most deliveries a second and/or a minute the senders start to one destination.
 * Enforced by the sender that owns the destination's delivery partition (services/sender/src/controls/
 * rate-limit.ts; docs/delivery-controls.md, "Rate limits").
 *
 * `ordered`: the destination's deliveries are made one at a time in the order of the events topic; a
 * failing one is retried in place and the later ones wait behind it (services/sender/src/controls/
 * ordered.ts; docs/delivery-controls.md, "Ordered delivery").
 */

/** Largest rate limits accepted: beyond them a limit would be no limit (and spacing below a millisecond). */
export const RATE_LIMIT_MAX_PER_SECOND = 10_000;
export const RATE_LIMIT_MAX_PER_MINUTE = 600_000;

/** `rate_limit` as input and as answered: at least one of the two; null (PATCH) removes it. */
export const rateLimitSchema = {
  type: ['object', 'null'],
  additionalProperties: false,
  minProperties: 1,
  description:
    'The most deliveries the senders start to this destination per second and/or per minute; excess deliveries wait (no attempt is counted). Null or absent: no limit.',
  properties: {
    per_second: { type: 'integer', minimum: 1, maximum: RATE_LIMIT_MAX_PER_SECOND, description: 'Deliveries per second at most.' },
    per_minute: { type: 'integer', minimum: 1, maximum: RATE_LIMIT_MAX_PER_MINUTE, description: 'Deliveries per minute at most.' },
  },
} as const;

/**
 * `ordered` as input: false (the default) delivers concurrently, in no guaranteed order; null (a
 * merge patch's "back to the default") is false. Answered as a boolean.
 */
export const orderedSchema = {
  type: ['boolean', 'null'],
  description:
    "True: deliveries to this destination are made one at a time, in publish order; while one fails and waits for its retry, later ones wait behind it, and once it is given up (retries exhausted, or canceled) the next proceeds. A manual retry is delivered once, when its turn in the destination's queue comes (out of the event's original order), and never retried automatically. Null or absent: false.",
} as const;

/** The controls every type accepts, as /destination-types serves them (`controls`). */
export const DELIVERY_CONTROLS = {
  rate_limit: rateLimitSchema,
  ordered: orderedSchema,
} as const;
